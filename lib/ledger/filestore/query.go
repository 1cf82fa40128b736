package filestore

import (
	"errors"
	"sort"

	"github.com/tether-sh/tether/lib/ledger"
)

// execRef is where Each finds one execution: its claim frame and its
// newest frame in its job's log (jobs[job]). It is all Each holds per
// execution: some 60 bytes.
type execRef struct {
	id                string
	job               int32
	claimOff, lastOff int64
}

// Each calls fn with each execution matching f, oldest first (by id,
// which is claim time), one at a time. It walks each job's log once to
// find where every execution's claim and newest version are, then reads
// them in order: it holds those offsets, never the records. Claimed or
// running executions are found from active/ alone. Records that cannot be
// read are passed over and reported together after the others (wrapping
// ledger.ErrCorrupt).
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
	logs := make([]*jobLog, len(jobs))
	defer func() {
		for _, l := range logs {
			if l != nil {
				l.close()
			}
		}
	}()
	var refs []execRef
	var errs []error
	for i, job := range jobs {
		jd, l, ok, err := s.openJob(job)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !ok {
			continue
		}
		closeDir(jd)
		logs[i] = l
		if refs, err = l.refs(refs, int32(i)); err != nil {
			errs = append(errs, err)
		}
	}
	if len(jobs) > 1 {
		sort.Slice(refs, func(a, b int) bool { return refs[a].id < refs[b].id })
	}
	for _, ref := range refs {
		r, err := logs[ref.job].version(ref)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if f.Status == "" || r.Status == f.Status {
			if err := fn(r); err != nil {
				return err
			}
		}
	}
	return errors.Join(errs...)
}

// refs appends to refs where each execution of l is (job: l's index in
// the caller's list), in claim order.
func (l *jobLog) refs(refs []execRef, job int32) ([]execRef, error) {
	from := len(refs)
	_, err := l.scan(l.first, func(e entry) error {
		switch e.kind {
		case kindClaim:
			refs = append(refs, execRef{id: e.id, job: job, claimOff: e.off, lastOff: e.off})
		case kindUpdate:
			mine := refs[from:]
			i := sort.Search(len(mine), func(i int) bool { return mine[i].claimOff >= e.ref })
			if i < len(mine) && mine[i].claimOff == e.ref && mine[i].id == e.id {
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
	if err == nil && e.id != ref.id {
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
