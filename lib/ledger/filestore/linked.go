package filestore

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/internal/durable"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/filestore/jobindex"
	"github.com/tether-sh/tether/lib/ledger/filestore/joblog"
)

// The links note: whether every live execution of the logs has its link
// and every job its index of finished executions (ids.go), so that a
// claim need not flush active/ nor a finish its index entry (see "Crash
// safety" in doc.go).
//
//	DIR/linked                 "BOOT_ID\nids 2\n": every link and index
//	                           entry made during boot BOOT_ID is kept
//	                           ("none" for BOOT_ID where the boot id is
//	                           unknown: every link was flushed)
//
// A link or entry the kernel holds is lost only with its boot (a power
// cut, a crash of the machine); a process killed at any instant loses
// nothing the kernel has. So once the links and indexes have been made
// whole and flushed during a boot, and the note written after them, one
// made later in the same boot stays until the machine stops, and the
// first writer of the next boot finds the note of another boot and makes
// them whole again from the logs before it does anything else. Until
// then, no one trusts active/ or an index to be whole: an id without a
// link is looked for in every log, and the live executions are found by
// reading the logs.

const (
	linkedName = "linked"
	maxLinked  = 256
)

// linkedNote is what the note holds once the links and the indexes are
// whole during this boot. Its second line names the indexes' format
// (ids.go, package jobindex). A note that says anything else is taken
// for another boot's: the first writer makes the store whole.
func linkedNote() string {
	b := ledger.BootID()
	if b == "" {
		b = "none"
	}
	return b + "\nids 2\n"
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

// mendLinks makes every live execution's link and every job's index
// whole from the logs, flushes them, and then notes it, unless the note
// says this boot did already. Called with the lock held, before anything
// else. Where the links cannot be made whole (an I/O
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

// relinkAll makes every job's index (ids.go) and the link of every live
// execution whole from the logs, and flushes what it changed. Only live
// executions without a link are read: after a clean shutdown, every link
// and index is whole and nothing is written. A damaged log's executions
// up to its damage are linked and indexed, and its index keeps the
// entries it had past the damage.
func (s *Store) relinkAll() error {
	names, err := readNames(s.active)
	if err != nil {
		return err
	}
	linked := make(map[string]bool, len(names))
	for _, n := range names {
		linked[n] = true
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
	return s.active.Sync()
}

// relinkJob writes job's index from its log where the one in place
// differs, links each live execution whose id is not in linked, and
// removes the link of each terminal one that is (after a crash, a link
// that never left active/).
func (s *Store) relinkJob(job string, linked map[string]bool) error {
	jd, l, ok, err := s.openJob(job)
	if err != nil || !ok {
		return err
	}
	defer closeDir(jd)
	defer l.Close()
	type unlinked struct {
		id                string
		claimOff, lastOff int64
		terminal          bool
	}
	var todo []unlinked // in claim order, so sorted by claim offset
	var stale []string
	var ents []jobindex.Ent
	end, walkErr := l.Scan(l.First, func(e joblog.Entry) error {
		terminal := terminalFrame(e)
		if terminal {
			ents = append(ents, jobindex.EntOf(e.ID, e.Off))
			if linked[string(e.ID)] {
				stale = append(stale, string(e.ID))
			}
		}
		switch {
		case e.Kind == joblog.KindClaim && !terminal && !linked[string(e.ID)]:
			todo = append(todo, unlinked{id: string(e.ID), claimOff: e.Off, lastOff: e.Off})
		case e.Kind == joblog.KindUpdate:
			i := sort.Search(len(todo), func(i int) bool { return todo[i].claimOff >= e.Ref })
			if i < len(todo) && todo[i].claimOff == e.Ref {
				todo[i].lastOff, todo[i].terminal = e.Off, terminal
			}
		}
		return nil
	})
	if walkErr != nil {
		ents = keepPast(ents, end, jd, l)
	}
	slices.SortFunc(ents, jobindex.Cmp)
	if !sameIds(jd, l, ents) {
		if err := writeIds(jd, idsOf(l, ents), true); err != nil {
			return err
		}
	}
	for _, u := range todo {
		if u.terminal {
			continue // in the index now
		}
		if err := relink(s.active, u.id, hintOf(l.Gen, u.lastOff, job)); err != nil {
			return err
		}
	}
	for _, id := range stale {
		unix.Unlinkat(s.active.FD, id, 0)
	}
	return walkErr
}

// keepPast adds to ents, the index of a log walked up to its damage at
// end, the entries past it that the index in jd (of l) held: the records
// finished after the damage stay readable, as they were.
func keepPast(ents []jobindex.Ent, end int64, jd dirh, l *jobLog) []jobindex.Ent {
	if f, ok := readIds(jd); ok && f.Of(l.Gen, l.Ino) {
		for _, e := range jobindex.Ents(f.Entries) {
			if e.Off > end {
				ents = append(ents, e)
			}
		}
	}
	return ents
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
// to job): what active/ holds when the links are whole. Each log is read
// once, frame by frame: a claim that no frame makes terminal is live.
func (s *Store) liveInLogs() (map[string]string, error) {
	jobs, err := s.jobNames()
	if err != nil {
		return nil, err
	}
	live := map[string]string{}
	var errs []error
	for _, job := range jobs {
		jd, l, ok, err := s.openJob(job)
		if err != nil || !ok {
			if err != nil {
				errs = append(errs, err)
			}
			continue
		}
		closeDir(jd)
		claims := map[int64]string{} // by offset, live so far
		_, err = l.Scan(l.First, func(e joblog.Entry) error {
			switch {
			case e.Kind == joblog.KindClaim && !terminalFrame(e):
				claims[e.Off] = string(e.ID)
			case e.Kind == joblog.KindUpdate && terminalFrame(e):
				delete(claims, e.Ref)
			}
			return nil
		})
		l.Close()
		for _, id := range claims {
			live[id] = job
		}
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
	jobs, err := s.jobsFor(id)
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
		loc := &located{job: job, jd: jd, log: l}
		if err := loc.walkFor(id); err != nil {
			loc.close()
			if !errors.Is(err, ledger.ErrNotFound) {
				errs = append(errs, err)
			}
			continue
		}
		if write {
			// Under the lock: the log is as read.
			l.Close()
			if loc.log, err = openLog(jd, job, true); err != nil {
				loc.log = nil
				loc.close()
				return nil, err
			}
		}
		return loc, nil
	}
	if len(errs) > 0 {
		// The id may be in what could not be read.
		return nil, errors.Join(errs...)
	}
	return nil, fmt.Errorf("%w %s", ledger.ErrNotFound, id)
}
