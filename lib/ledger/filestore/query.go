package filestore

import (
	"container/heap"
	"errors"
	"sort"

	"github.com/tether-sh/tether/lib/ledger"
)

// execRef is where an execution is in its job's log: its claim frame
// and its newest frame. It is all Each and Prune hold per execution: 16
// bytes.
type execRef struct {
	claimOff, lastOff int64
}

// Each calls fn with each execution matching f, oldest first (by id,
// which is claim time), one at a time. It walks each job's log once to
// find where every execution's claim and newest version are, then reads
// them in order, merging the jobs by id: it holds those offsets and one
// record per job, never the rest. Claimed or running executions are found
// from active/ alone. Records that cannot be read are passed over and
// reported together after the others (wrapping ledger.ErrCorrupt).
func (s *Store) Each(f ledger.Filter, fn func(ledger.Record) error) error {
	if f.Job != "" {
		if err := ledger.ValidJob(f.Job); err != nil {
			return err
		}
	}
	if f.Status != "" && !f.Status.Valid() {
		_, err := ledger.ParseStatus(string(f.Status))
		return err
	}
	if err := s.needMigrated(); err != nil {
		return err
	}
	if f.Status == ledger.Claimed || f.Status == ledger.Running {
		return s.eachActive(f, fn)
	}
	jobs := []string{f.Job}
	if f.Job == "" {
		var err error
		if jobs, err = s.jobNames(); err != nil {
			return err
		}
	}
	var m merge
	defer m.close()
	for _, job := range jobs {
		jd, l, ok, err := s.openJob(job)
		if err != nil {
			m.errs = append(m.errs, err)
			continue
		}
		if !ok {
			continue
		}
		closeDir(jd)
		l.ahead = true
		w := &walk{l: l}
		if w.refs, err = l.refs(nil); err != nil {
			m.errs = append(m.errs, err)
		}
		m.add(w)
	}
	for {
		r, ok := m.next()
		if !ok {
			break
		}
		if f.Status == "" || r.Status == f.Status {
			if err := fn(r); err != nil {
				return err
			}
		}
	}
	return errors.Join(m.errs...)
}

// walk is one job's executions in claim order, as Each reads them.
type walk struct {
	l    *jobLog
	refs []execRef
	i    int
	head ledger.Record // refs[i-1]'s, the next to pass on
}

// advance reads the walk's next record into head; false at its end.
func (w *walk) advance(errs *[]error) bool {
	for w.i < len(w.refs) {
		r, err := w.l.version(w.refs[w.i])
		w.i++
		if err != nil {
			*errs = append(*errs, err)
			continue
		}
		w.head = r
		return true
	}
	return false
}

// merge passes on the records of several walks in id order.
type merge struct {
	walks []*walk // a heap by head id
	all   []*walk
	errs  []error
}

func (m *merge) add(w *walk) {
	m.all = append(m.all, w)
	if w.advance(&m.errs) {
		m.walks = append(m.walks, w)
		heap.Fix(m, len(m.walks)-1)
	}
}

// next returns the oldest record of all walks.
func (m *merge) next() (ledger.Record, bool) {
	if len(m.walks) == 0 {
		return ledger.Record{}, false
	}
	w := m.walks[0]
	r := w.head
	if w.advance(&m.errs) {
		heap.Fix(m, 0)
	} else {
		heap.Pop(m)
	}
	return r, true
}

func (m *merge) close() {
	for _, w := range m.all {
		w.l.close()
	}
}

func (m *merge) Len() int           { return len(m.walks) }
func (m *merge) Less(a, b int) bool { return m.walks[a].head.ID < m.walks[b].head.ID }
func (m *merge) Swap(a, b int)      { m.walks[a], m.walks[b] = m.walks[b], m.walks[a] }
func (m *merge) Push(x any)         { m.walks = append(m.walks, x.(*walk)) }
func (m *merge) Pop() any {
	w := m.walks[len(m.walks)-1]
	m.walks = m.walks[:len(m.walks)-1]
	return w
}

// refs appends to refs where each execution of l is, in claim order.
func (l *jobLog) refs(refs []execRef) ([]execRef, error) {
	from := len(refs)
	_, err := l.scan(l.first, func(e entry) error {
		switch e.kind {
		case kindClaim:
			refs = append(refs, execRef{claimOff: e.off, lastOff: e.off})
		case kindUpdate:
			mine := refs[from:]
			i := sort.Search(len(mine), func(i int) bool { return mine[i].claimOff >= e.ref })
			if i < len(mine) && mine[i].claimOff == e.ref {
				mine[i].lastOff = e.off
			}
		}
		return nil
	})
	return refs, err
}

// version reads the version of an execution that ref names.
func (l *jobLog) version(ref execRef) (ledger.Record, error) {
	loc := &located{log: l, claimOff: -1}
	e, err := l.readAt(ref.lastOff)
	if err == nil && e.kind == kindUpdate && e.ref != ref.claimOff {
		err = errFrame
	}
	if err == nil {
		err = loc.take(e)
	}
	if err != nil {
		if errors.Is(err, errFrame) {
			return ledger.Record{}, l.corrupt(ref.lastOff, err)
		}
		return ledger.Record{}, err
	}
	return loc.rec, nil
}

// eachActive is Each for a status that is not terminal: every such
// execution has its link in active/ (made before its claim frame), so
// only active/ is read, whatever the store holds.
func (s *Store) eachActive(f ledger.Filter, fn func(ledger.Record) error) error {
	var errs []error
	var fnErr error
	err := s.scanActive(func(id, job string) error {
		if f.Job != "" && job != f.Job {
			return nil
		}
		r, err := s.readRecord(id)
		switch {
		case errors.Is(err, ledger.ErrNotFound):
		case err != nil:
			errs = append(errs, err)
		case r.Job == job && r.Status == f.Status:
			fnErr = fn(r)
			return fnErr
		}
		return nil
	})
	if fnErr != nil {
		return fnErr
	}
	return errors.Join(append(errs, err)...)
}

// closeDir closes a directory the caller opened.
func closeDir(d dirh) {
	if d.FD >= 0 {
		closeFD(d.FD)
	}
}
