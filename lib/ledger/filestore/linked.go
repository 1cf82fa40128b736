package filestore

import (
	"errors"
	"fmt"
	"os"
	"sort"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/internal/durable"
	"github.com/tether-sh/tether/lib/ledger"
)

// The links note: whether every execution of the logs has its link, so
// that a claim need not flush active/ (see "Crash safety" in doc.go).
//
//	DIR/linked                 "BOOT_ID\n": every link made during boot
//	                           BOOT_ID is kept ("none\n" where the boot id
//	                           is unknown: every link was flushed)
//
// A link the kernel holds is lost only with its boot (a power cut, a
// crash of the machine); a process killed at any instant loses nothing
// the kernel has. So once the links have been made whole and flushed
// during a boot, and the note written after them, a link made later in
// the same boot stays until the machine stops, and the first writer of
// the next boot finds the note of another boot and makes them whole
// again from the logs before it does anything else. Until then, no one
// trusts active/ to be whole: an id without a link is looked for in every
// log, and the live executions are found by reading the logs.

const (
	linkedName = "linked"
	maxLinked  = 256
)

// linkedNote is what the note holds once the links are whole during this
// boot.
func linkedNote() string {
	if b := ledger.BootID(); b != "" {
		return b + "\n"
	}
	return "none\n"
}

// linksWhole reports whether every execution in the logs has its link:
// the note names this boot.
func (s *Store) linksWhole() bool {
	if s.linked.Load() {
		return true
	}
	b, err := readSmall(s.root, linkedName, maxLinked)
	if err != nil || string(b) != linkedNote() {
		return false
	}
	s.linked.Store(true)
	return true
}

// linksKept reports whether a claim may leave its link unflushed: the
// links are whole and the boot is known, so a loss of the link is a loss
// of the boot, which the next writer finds.
func (s *Store) linksKept() bool {
	return ledger.BootID() != "" && s.linksWhole()
}

// mendLinks makes every execution's link whole from the logs, flushes
// active/ and exec/, and then notes it, unless the note says this boot
// did already. Called with the lock held, before anything else, on a
// store of job logs (Open migrated it; migrate itself takes the lock
// without mending). Where the links cannot be made whole (an I/O
// error), the store goes on without the note: claims flush active/ and
// readers read the logs, as linksWhole says.
func (s *Store) mendLinks() {
	if s.linksWhole() {
		return
	}
	if s.relinkAll() != nil {
		return
	}
	reached("relinked")
	if durable.WriteSynced(s.root, linkedName, []byte(linkedNote())) == nil {
		s.linked.Store(true)
	}
}

// relinkAll gives every execution of every job's log a link where it has
// none, and flushes active/ and exec/. Only those without one are read
// (their status says which folder): after a clean shutdown, all have one.
// A damaged log's executions up to its damage are linked; the rest are
// unreadable anyway.
func (s *Store) relinkAll() error {
	linked := map[string]bool{}
	for _, d := range []dirh{s.active, s.exec} {
		names, err := readNames(d)
		if err != nil {
			return err
		}
		for _, n := range names {
			linked[n] = true
		}
	}
	jobs, err := s.jobNames()
	if err != nil {
		return err
	}
	for _, job := range jobs {
		if err := s.relinkJob(job, linked); err != nil && !errors.Is(err, ledger.ErrCorrupt) {
			return err
		}
	}
	return syncDirs(s.active, s.exec)
}

// relinkJob links each execution of job's log whose id is not in linked.
func (s *Store) relinkJob(job string, linked map[string]bool) error {
	jd, l, ok, err := s.openJob(job)
	if err != nil || !ok {
		return err
	}
	closeDir(jd)
	defer l.close()
	type unlinked struct {
		id  string
		ref execRef
	}
	var todo []unlinked // in claim order, so sorted by claim offset
	_, walkErr := l.scan(l.first, func(e entry) error {
		switch {
		case e.kind == kindClaim && !linked[string(e.id)]:
			todo = append(todo, unlinked{string(e.id), execRef{e.off, e.off}})
		case e.kind == kindUpdate:
			i := sort.Search(len(todo), func(i int) bool { return todo[i].ref.claimOff >= e.ref })
			if i < len(todo) && todo[i].ref.claimOff == e.ref {
				todo[i].ref.lastOff = e.off
			}
		}
		return nil
	})
	var bad error
	for _, u := range todo {
		_, st, err := l.state(u.ref)
		if err != nil {
			bad = err
			continue
		}
		d := s.active
		if st.Terminal() {
			d = s.exec
		}
		if err := relink(d, u.id, hintOf(l.gen, u.ref.lastOff, job)); err != nil {
			return err
		}
	}
	return errors.Join(walkErr, bad)
}

// eachInLog calls fn with each execution of job's log (where it is, its
// id and its newest status), in claim order. A job without a log is none;
// a version that cannot be read is passed over and reported at the end.
func (s *Store) eachInLog(job string, fn func(l *jobLog, ref execRef, id string, st ledger.Status) error) error {
	jd, l, ok, err := s.openJob(job)
	if err != nil || !ok {
		return err
	}
	closeDir(jd)
	defer l.close()
	refs, walkErr := l.refs(nil)
	var bad error
	for _, ref := range refs {
		id, st, err := l.state(ref)
		if err != nil {
			bad = err
			continue
		}
		if err := fn(l, ref, id, st); err != nil {
			return err
		}
	}
	return errors.Join(walkErr, bad)
}

// state reads the id and status of the version ref names.
func (l *jobLog) state(ref execRef) (id string, st ledger.Status, err error) {
	if l.fromBytes(ref, func(claim, delta []byte, i string) (ok bool) {
		st, _, _, ok = ledger.StoredFate(claim, delta, i)
		id = i
		return ok
	}) {
		return id, st, nil
	}
	r, err := l.version(ref)
	return r.ID, r.Status, err
}

// relink gives execution id the link target in d: made where there is
// none, renamed over one that is there after all.
func relink(d dirh, id, target string) error {
	err := unix.Symlinkat(target, d.FD, id)
	if err == unix.EEXIST {
		return setLink(d, id, target)
	}
	if err != nil {
		return &os.PathError{Op: "symlink", Path: d.Show(id), Err: err}
	}
	return nil
}

// liveInLogs returns the executions of the logs that are not terminal (id
// to job): what active/ holds when the links are whole.
func (s *Store) liveInLogs() (map[string]string, error) {
	jobs, err := s.jobNames()
	if err != nil {
		return nil, err
	}
	live := map[string]string{}
	var errs []error
	for _, job := range jobs {
		err := s.eachInLog(job, func(_ *jobLog, _ execRef, id string, st ledger.Status) error {
			if !st.Terminal() {
				live[id] = job
			}
			return nil
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	return live, errors.Join(errs...)
}

// errFound ends a walk that found what it looked for.
var errFound = errors.New("found")

// locateInLogs finds execution id by reading every job's log for its
// claim: for an id without a link while the links may not be whole.
func (s *Store) locateInLogs(id string, write bool) (*located, error) {
	jobs, err := s.jobNames()
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, job := range jobs {
		jd, l, ok, err := s.openJob(job)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !ok {
			continue
		}
		at := int64(-1)
		_, err = l.scan(l.first, func(e entry) error {
			if e.kind == kindClaim && string(e.id) == id {
				at = e.off
				return errFound
			}
			return nil
		})
		if at < 0 {
			l.close()
			closeDir(jd)
			if err != nil {
				errs = append(errs, err)
			}
			continue
		}
		loc := &located{job: job, jd: jd, log: l}
		if write {
			l.close()
			if loc.log, err = openLog(jd, job, true); err != nil {
				loc.log = nil
				loc.close()
				return nil, err
			}
		}
		if err := loc.find(id, loc.log.gen, at); err != nil {
			loc.close()
			return nil, err
		}
		return loc, nil
	}
	if len(errs) > 0 {
		// The id may be in what could not be read.
		return nil, errors.Join(errs...)
	}
	return nil, fmt.Errorf("%w %s", ledger.ErrNotFound, id)
}

// inLogs reports whether execution id is in a job's log, for an id
// without a link while the links may not be whole.
func (s *Store) inLogs(id string) (bool, error) {
	loc, err := s.locateInLogs(id, false)
	if errors.Is(err, ledger.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	loc.close()
	return true, nil
}
