package filestore

import (
	"container/heap"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/filestore/joblog"
	"github.com/tether-sh/tether/lib/ledger/filestore/wire"
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
// them in order, merging the jobs by id: it holds those offsets and the
// id of each job's next execution, never the records, and reads through
// one set of buffers however many jobs there are (joblog.Lender). Claimed or
// running executions are found from active/ alone. Records that cannot
// be read are passed over and reported together after the others
// (wrapping ledger.ErrCorrupt).
func (s *Store) Each(f ledger.Filter, fn func(ledger.Record) error) error {
	return s.each(f, false, fn, func(m *merge) error { return fn(m.rec) })
}

// EachJSON is Each passing on each record as the object MarshalJSON
// prints (ledger.JSONEacher), built from its claim and newest delta by
// wire.AppendStoredJSON when it can vouch for them, else from the
// record decoded. b is valid only during the call.
func (s *Store) EachJSON(f ledger.Filter, fn func(b []byte) error) error {
	viaRecord := func(r ledger.Record) error {
		b, err := r.MarshalJSON()
		if err != nil {
			return err
		}
		return fn(b)
	}
	return s.each(f, true, viaRecord, func(m *merge) error { return fn(m.json) })
}

// each is Each, and EachJSON when asJSON (the merge then reads json, not
// rec). active takes a record of active/, pass the merge with the head it
// read.
func (s *Store) each(f ledger.Filter, asJSON bool, active func(ledger.Record) error, pass func(*merge) error) error {
	if err := ledger.CheckFilter(f); err != nil {
		return err
	}
	if f.Status == ledger.Claimed || f.Status == ledger.Running {
		return s.eachActive(f, active)
	}
	jobs := []string{f.Job}
	if f.Job == "" {
		var err error
		if jobs, err = s.jobNames(); err != nil {
			return err
		}
	}
	m := merge{s: s, asJSON: asJSON, maxOpen: openLogsLimit()}
	defer m.close()
	for _, job := range jobs {
		l, ok, err := m.openLog(job)
		if outOfFiles(err) {
			// Descriptors ran out with no log of the merge open: one
			// line, not a line for every job after.
			return errOutOfFiles(err)
		}
		if err != nil {
			m.errs = append(m.errs, err)
			continue
		}
		if !ok {
			continue
		}
		w := &walk{job: job, gen: l.Gen, l: l}
		if f.Newest > 0 {
			w.refs, err = l.newestRefs(f.Newest)
		} else {
			w.refs, err = l.refs(nil)
		}
		if err != nil {
			m.errs = append(m.errs, err)
		}
		m.opened = append(m.opened, w)
		m.add(w)
		m.trim()
	}
	for len(m.walks) > 0 {
		err := m.reopen(m.walks[0])
		if outOfFiles(err) {
			return errors.Join(append(m.errs, errOutOfFiles(err))...)
		}
		if err != nil {
			if err != errPruned {
				m.errs = append(m.errs, err)
			}
			heap.Pop(&m)
			continue
		}
		if m.read(m.walks[0]) && (f.Status == "" || m.status == f.Status) {
			if err := pass(&m); err != nil {
				return err
			}
		}
		m.step()
	}
	switch n := len(m.pruned); {
	case n == 1:
		m.errs = append(m.errs, fmt.Errorf("job %s's log was pruned while it was listed; what it holds now is not listed: list again", m.pruned[0]))
	case n > 1:
		// One line for them all: a prune of every job meets many.
		sort.Strings(m.pruned)
		names := strings.Join(m.pruned[:min(n, 3)], ", ")
		if n > 3 {
			names += ", …"
		}
		m.errs = append(m.errs, fmt.Errorf("%d jobs' logs were pruned while they were listed (%s); what they hold now is not listed: list again", n, names))
	}
	return errors.Join(m.errs...)
}

// errPruned is reopen's word that a walk's log was pruned while closed
// (merge.pruned names the job).
var errPruned = errors.New("pruned while listed")

// errOutOfFiles is the one line a merge that no descriptor is left for
// ends with.
func errOutOfFiles(err error) error { return fmt.Errorf("cannot read the jobs' logs: %w", err) }

// outOfFiles reports whether err is the process's or the system's open
// files limit.
func outOfFiles(err error) bool {
	return errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE)
}

// maxOpenLogs, when not 0, is how many job logs a merge keeps open at
// once (the tests' choice); else openLogsLimit says.
var maxOpenLogs int

// openLogsLimit is how many job logs a merge keeps open at once: all but
// an eighth (at least 16) of the descriptors the process may open (Go
// raises the soft limit to the hard one at start), 4 to 16384: an open
// file each in the kernel. Past it, a log is opened again for each record
// in the worst case (jobs whose executions alternate): about 13 system
// calls each (strace: 200 jobs of 2 alternating executions listed with 4
// logs open made 5,067 more calls than with all 200 open).
func openLogsLimit() int {
	if maxOpenLogs > 0 {
		return maxOpenLogs
	}
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 64
	}
	n := lim.Cur - max(lim.Cur/8, 16)
	if lim.Cur < 16+4 {
		n = 4
	}
	return int(min(max(n, 4), 16384))
}

// walk is one job's executions in claim order, as Each reads them.
type walk struct {
	job  string
	gen  int64   // the generation of the log refs are of
	l    *jobLog // nil while closed (merge.reopen)
	used uint64  // when the merge last read it
	refs []execRef
	i    int
	id   string // the head's, refs[i-1]'s: the next to pass on
}

// advance reads the id of the walk's next execution, its head; false at
// its end. The walk's log is open.
func (w *walk) advance(errs *[]error) bool {
	for w.i < len(w.refs) {
		off := w.refs[w.i].claimOff
		w.i++
		e, err := w.l.ReadAt(off)
		if err == nil && e.Kind != joblog.KindClaim {
			err = joblog.ErrFrame
		}
		if err != nil {
			*errs = append(*errs, w.l.Corrupt(off, err))
			continue
		}
		w.id = string(e.ID)
		return true
	}
	return false
}

// merge passes on the heads of several walks in id order. It keeps at
// most maxOpen of their logs open, closing the one read least recently
// to open another: a walk whose log was closed opens it again where it
// was, unless a prune has written the log's next generation since.
type merge struct {
	s       *Store
	walks   []*walk // a heap by head id
	opened  []*walk // those whose log is open
	maxOpen int
	clock   uint64
	pruned  []string // jobs whose log was pruned while closed (errPruned)
	errs    []error
	lend    joblog.Lender
	// The head of walks[0] as read to be passed on: its status, and the
	// record (rec) or, asJSON, MarshalJSON's object (json).
	asJSON bool
	status ledger.Status
	rec    ledger.Record
	json   []byte
}

// openLog opens job's log to read it through the merge's buffers; ok is
// false when the job has none. When descriptors run out, something else
// took some the merge counted on (the output's first flush takes one): it
// closes its logs one at a time, keeping fewer open from then on, until
// the log opens or none is left open.
func (m *merge) openLog(job string) (*jobLog, bool, error) {
	jd, l, ok, err := m.s.openJobLent(job, &m.lend)
	for outOfFiles(err) && len(m.opened) > 0 {
		m.maxOpen = len(m.opened) - 1
		m.trim()
		jd, l, ok, err = m.s.openJobLent(job, &m.lend)
	}
	m.maxOpen = max(m.maxOpen, 1)
	if err != nil || !ok {
		return nil, ok, err
	}
	closeDir(jd)
	l.Ahead = int(min(max(l.End, 4<<10), joblog.ReadSize))
	return l, true, nil
}

// reopen opens w's log again if the merge closed it, and counts w as
// read now.
func (m *merge) reopen(w *walk) error {
	m.clock++
	w.used = m.clock
	if w.l != nil {
		return nil
	}
	l, ok, err := m.openLog(w.job)
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("job %s: its log is gone", w.job)
	case l.Gen != w.gen:
		l.Close()
		m.pruned = append(m.pruned, w.job)
		return errPruned
	}
	w.l = l
	m.opened = append(m.opened, w)
	m.trim()
	return nil
}

// trim closes the logs read least recently until at most maxOpen are
// open.
func (m *merge) trim() {
	for len(m.opened) > m.maxOpen {
		lru := 0
		for i, w := range m.opened {
			if w.used < m.opened[lru].used {
				lru = i
			}
		}
		m.opened[lru].l.Close()
		m.opened[lru].l = nil
		m.opened = slices.Delete(m.opened, lru, lru+1)
	}
}

func (m *merge) add(w *walk) {
	m.clock++
	w.used = m.clock
	if w.advance(&m.errs) {
		m.walks = append(m.walks, w)
		heap.Fix(m, len(m.walks)-1)
	}
}

// read reads w's head, the version of the execution advance found, to be
// passed on; false (the error kept) when it cannot be read.
func (m *merge) read(w *walk) bool {
	ref := w.refs[w.i-1]
	var err error
	if m.asJSON {
		m.json, _, m.status, err = w.l.versionJSON(ref, m.json[:0])
	} else if m.rec, err = w.l.version(ref); err == nil {
		m.status = m.rec.Status
	}
	if err != nil {
		m.errs = append(m.errs, err)
		return false
	}
	return true
}

// step advances the walk whose head is the oldest, walks[0], once its
// head is passed on.
func (m *merge) step() {
	if m.walks[0].advance(&m.errs) {
		heap.Fix(m, 0)
	} else {
		heap.Pop(m)
	}
}

func (m *merge) close() {
	for _, w := range m.opened {
		w.l.Close()
	}
}

func (m *merge) Len() int           { return len(m.walks) }
func (m *merge) Less(a, b int) bool { return m.walks[a].id < m.walks[b].id }
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
	_, err := l.Scan(l.First, func(e joblog.Entry) error {
		switch e.Kind {
		case joblog.KindClaim:
			refs = append(refs, execRef{claimOff: e.Off, lastOff: e.Off})
		case joblog.KindUpdate:
			mine := refs[from:]
			i := sort.Search(len(mine), func(i int) bool { return mine[i].claimOff >= e.Ref })
			if i < len(mine) && mine[i].claimOff == e.Ref {
				mine[i].lastOff = e.Off
			}
		}
		return nil
	})
	return refs, err
}

// newestRefs is where the newest n executions of l are, in claim order.
// It reads the log backwards from its end (joblog.Log.Backward) until it
// has passed the nth claim from the end: the frames of the newest n and
// of what else ran meanwhile, however many the job holds. A frame that
// does not read backwards (an append under way, a torn tail, damage)
// sends it to the forward scan, which reports what it must.
func (l *jobLog) newestRefs(n int) ([]execRef, error) {
	var refs []execRef        // newest first
	last := map[int64]int64{} // claim offset → its newest frame's, of the frames passed
	err := l.Backward(l.End, func(e joblog.Entry) bool {
		switch e.Kind {
		case joblog.KindClaim:
			ref := execRef{claimOff: e.Off, lastOff: e.Off}
			if off, ok := last[e.Off]; ok {
				ref.lastOff = off
				delete(last, e.Off)
			}
			refs = append(refs, ref)
		case joblog.KindUpdate:
			if _, ok := last[e.Ref]; !ok {
				last[e.Ref] = e.Off
			}
		}
		return len(refs) < n
	})
	if err != nil {
		all, err := l.refs(nil)
		return all[max(len(all)-n, 0):], err
	}
	slices.Reverse(refs)
	return refs, nil
}

// version reads the version of an execution that ref names.
func (l *jobLog) version(ref execRef) (ledger.Record, error) {
	loc := &located{log: l, claimOff: -1}
	e, err := l.ReadAt(ref.lastOff)
	if err == nil && e.Kind == joblog.KindUpdate && e.Ref != ref.claimOff {
		err = joblog.ErrFrame
	}
	if err == nil {
		err = loc.take(e)
	}
	if err != nil {
		if errors.Is(err, joblog.ErrFrame) {
			return ledger.Record{}, l.Corrupt(ref.lastOff, err)
		}
		return ledger.Record{}, err
	}
	return loc.rec, nil
}

// versionJSON appends to dst the version ref names as MarshalJSON's
// object, and returns its id and status.
func (l *jobLog) versionJSON(ref execRef, dst []byte) (b []byte, id string, st ledger.Status, err error) {
	if l.fromBytes(ref, func(claim, delta []byte, i string) (ok bool) {
		id = i
		b, st, ok = wire.AppendStoredJSON(dst, claim, delta, id)
		return ok
	}) {
		return b, id, st, nil
	}
	r, err := l.version(ref)
	if err != nil {
		return dst, "", "", err
	}
	j, err := r.MarshalJSON()
	return append(dst, j...), r.ID, r.Status, err
}

// fate reads what Prune decides by of the version ref names.
func (l *jobLog) fate(ref execRef) (fate, error) {
	var f fate
	var finished, instant time.Time
	if !l.fromBytes(ref, func(claim, delta []byte, id string) (ok bool) {
		f.status, finished, instant, ok = wire.StoredFate(claim, delta, id)
		return ok
	}) {
		r, err := l.version(ref)
		if err != nil {
			return f, err
		}
		f.status, finished, instant = r.Status, r.FinishedAt, r.Instant
	}
	if f.status.Terminal() {
		f.finished = finished.UnixNano()
	}
	if !instant.IsZero() {
		f.instant = instant.UnixNano()
	}
	return f, nil
}

// fromBytes calls read with the payloads of the claim and newest delta
// ref names (delta nil when the claim is the newest version) and the
// execution's id, to read the version from its stored bytes (the ledger
// package's AppendStoredJSON, StoredFate). It is false when they are not
// frames of one execution where ref says, or read declines them: the
// caller then reads the version decoded (version), which reports what is
// wrong. It reads the claim first: walks go in claim order, so the
// read-ahead window moves on, never back, and the newest version is
// mostly a little after its claim.
func (l *jobLog) fromBytes(ref execRef, read func(claim, delta []byte, id string) bool) bool {
	c, err := l.ReadAt(ref.claimOff)
	if err != nil || c.Kind != joblog.KindClaim {
		return false
	}
	id := string(c.ID)
	if ref.lastOff == ref.claimOff {
		return read(c.Data, nil, id)
	}
	// Reading the delta may move the window the claim is in.
	claim := l.ClaimBuffer()
	*claim = append((*claim)[:0], c.Data...)
	e, err := l.ReadAt(ref.lastOff)
	if err != nil || e.Kind != joblog.KindUpdate || e.Ref != ref.claimOff || string(e.ID) != id {
		return false
	}
	return read(*claim, e.Data, id)
}

// eachActive is Each for a status that is not terminal: every such
// execution has its link in active/ (made before its claim frame), so
// only active/ is read, whatever the store holds.
func (s *Store) eachActive(f ledger.Filter, fn func(ledger.Record) error) error {
	var errs []error
	var fnErr error
	live := map[string][]ledger.Record{}
	err := s.scanActive(func(id, job string) error {
		if f.Job != "" && job != f.Job {
			return nil
		}
		r, err := s.readRecord(id)
		switch {
		case errors.Is(err, ledger.ErrNotFound):
		case err != nil:
			errs = append(errs, err)
		case r.Job == job && !r.Status.Terminal():
			live[job] = append(live[job], r)
			if r.Status == f.Status {
				fnErr = fn(r)
				return fnErr
			}
		}
		return nil
	})
	if fnErr != nil {
		return fnErr
	}
	return errors.Join(append(errs, err, s.unlinkedIn(f.Job, live))...)
}

// unlinkedIn reports, as status does (Store.summary), a live execution
// that job's log (every job's when job is "") holds without a link in
// active/, where live are the linked ones by job: active/ alone would
// list it as not there.
func (s *Store) unlinkedIn(job string, live map[string][]ledger.Record) error {
	jobs := []string{job}
	if job == "" {
		var err error
		if jobs, err = s.jobNames(); err != nil {
			return err
		}
	}
	var errs []error
	var lend joblog.Lender // one log at a time: one set of buffers
	for _, j := range jobs {
		if _, err := s.summary(j, live[j], &lend, true); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// closeDir closes a directory the caller opened.
func closeDir(d dirh) {
	if d.FD >= 0 {
		closeFD(d.FD)
	}
}
