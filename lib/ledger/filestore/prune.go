package filestore

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/filestore/jobindex"
	"github.com/tether-sh/tether/lib/ledger/filestore/joblog"
	"github.com/tether-sh/tether/lib/ledger/filestore/wire"
)

// Prune deletes terminal records (never claimed or running ones) selected
// by o, passes each to fn (if not nil) as it was before the prune, and
// returns how many it deleted: with an error, how many went before it (a
// job whose log could not be rewritten loses nothing, and none of its
// records reach fn). The (job, instant) of a pruned completed or
// unknown execution stays taken: its slot becomes a tombstone first. Prune
// also deletes files left behind by interrupted writes. A job whose log
// cannot be read whole is not pruned; the error says why.
//
// It works job by job (in name order). It walks the job's log once to
// find where each execution is (execRef), reads each one's newest version
// to decide it (the newest o.Keep terminal ones stay, and every live one),
// and then writes the log's next generation: its header counts what goes
// (so the job's summary loses nothing), then each execution that stays,
// as one claim frame of its newest version. It holds 64 bytes per
// execution (where it is, and its fate), never the records. fn gets each
// record that went, oldest first, once the next generation is in place:
// read from the old log, which its descriptor keeps readable.
func (s *Store) Prune(o ledger.PruneOptions, fn func(ledger.Record) error) (int, error) {
	if o.Keep < 0 || o.OlderThan < 0 {
		return 0, ledger.BadInputf("--keep and --older-than must not be negative")
	}
	jobs := []string{o.Job}
	if o.Job != "" {
		if err := ledger.ValidJob(o.Job); err != nil {
			return 0, err
		}
	}
	unlock, err := s.lock()
	if err != nil {
		return 0, err
	}
	defer unlock()
	if o.Job == "" {
		names, err := readNames(s.jobs)
		if err != nil {
			return 0, err
		}
		for _, n := range names {
			if ledger.ValidJob(n) != nil && strings.HasPrefix(n, tmpPrefix) && !o.DryRun {
				unix.Unlinkat(s.jobs.FD, n, 0)
			}
		}
		if jobs, err = s.jobNames(); err != nil {
			return 0, err
		}
	}
	p := pruner{s: s, o: o, now: s.clock(), fn: fn}
	var errs []error
	for _, job := range jobs {
		if err := p.job(job); err != nil {
			errs = append(errs, err)
		}
	}
	if p.fnErr != nil {
		errs = append(errs, p.fnErr)
	}
	if !o.DryRun && o.Job == "" {
		s.pruneOutputs(nil, true)
		s.pruneLeftovers(s.active)
	}
	return p.count, errors.Join(errs...)
}

// pruner is one Prune's walk over its jobs.
type pruner struct {
	s     *Store
	o     ledger.PruneOptions
	now   time.Time
	fn    func(ledger.Record) error
	fnErr error // fn's first error; fn is not called after it
	count int   // executions dropped (with DryRun, that would be)
}

// fate is what Prune keeps of an execution while it decides.
type fate struct {
	status   ledger.Status
	finished int64 // Unix nanoseconds; 0 while live
	instant  int64 // Unix nanoseconds; 0 for none
	drop     bool
}

// job is Prune for one job. Called with the lock held.
func (p *pruner) job(job string) error {
	s, o := p.s, p.o
	jd, err := openSubdir(s.jobs, job)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer closeDir(jd)
	l, err := openLog(jd, job, !o.DryRun)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pruning %s: %w", job, err)
	}
	defer l.Close()
	l.Ahead = joblog.ReadSize // the old log: nothing is appended to it
	refs, err := l.refs(nil)
	if err != nil {
		return fmt.Errorf("pruning %s: %w", job, err)
	}
	fates := make([]fate, len(refs))
	for i, ref := range refs {
		if fates[i], err = l.fate(ref); err != nil {
			return fmt.Errorf("pruning %s: %w", job, err)
		}
	}
	// The newest o.Keep terminal executions stay, and all after them.
	cut := len(refs)
	for kept := 0; cut > 0 && kept < o.Keep; {
		cut--
		if fates[cut].status.Terminal() {
			kept++
		}
	}
	dropped := 0
	for i := range fates[:cut] {
		f := &fates[i]
		if !f.status.Terminal() || o.OlderThan > 0 && p.now.Sub(time.Unix(0, f.finished)) < o.OlderThan {
			continue
		}
		f.drop = true
		dropped++
	}
	if dropped == 0 {
		return nil
	}
	if !o.DryRun {
		// A log not rewritten (a full disk) loses nothing: nothing of it
		// is counted or passed on.
		var gone bool
		if gone, err = s.compact(jd, l, job, refs, fates); !gone {
			return err
		}
	}
	p.count += dropped
	if perr := p.pass(job, l, refs, fates); err == nil {
		err = perr
	}
	return err
}

// pass calls fn with each execution fates drops, as l holds it (the log
// before the prune), until fn fails.
func (p *pruner) pass(job string, l *jobLog, refs []execRef, fates []fate) error {
	if p.fn == nil {
		return nil
	}
	for i, ref := range refs {
		if p.fnErr != nil {
			break
		}
		if !fates[i].drop {
			continue
		}
		r, err := l.version(ref)
		if err != nil {
			return fmt.Errorf("pruning %s: %w", job, err)
		}
		p.fnErr = p.fn(r)
	}
	return nil
}

// compact writes the next generation of job's log (l, in jd) without the
// executions fates drops, then removes what named them, and reports
// whether they are gone: the next generation renamed into place, even if
// an error followed. Called with the lock held.
func (s *Store) compact(jd dirh, l *jobLog, job string, refs []execRef, fates []fate) (bool, error) {
	total, _, err := counted(jd, l, job)
	if err != nil {
		return false, fmt.Errorf("pruning %s: %w", job, err)
	}
	id := func(ref execRef) (string, error) {
		e, err := l.ReadAt(ref.lastOff)
		if err != nil {
			return "", fmt.Errorf("pruning %s: %w", job, l.Corrupt(ref.lastOff, err))
		}
		return string(e.ID), nil
	}
	// 1. Tombstones, durable before any record disappears.
	if err := bury(jd, job, refs, fates, id); err != nil {
		return false, err
	}
	stays := map[ledger.Status]uint64{} // counted by their frames in the next log
	for _, f := range fates {
		if !f.drop && f.status.Terminal() {
			stays[f.status]++
		}
	}
	base := total.less(stays)
	// 2. The next generation, renamed over the log.
	nl, keep, renamed, err := writeNext(jd, l, job, refs, fates, base)
	if err != nil {
		return renamed, fmt.Errorf("pruning %s: %w", job, err)
	}
	defer nl.Close()
	reached("prune-renamed")
	if err := jd.Sync(); err != nil {
		return true, fmt.Errorf("pruning %s: %w", job, err)
	}
	// 3. The index, links, outputs, slots and the cache: none needs to be
	// durable (a stale link makes a reader walk the log, and finds nothing
	// there; a missing index, the same).
	var ents []jobindex.Ent
	for _, k := range keep {
		if k.terminal {
			ents = append(ents, jobindex.EntOf(k.id, k.off))
		} else {
			setLink(s.active, k.id, hintOf(nl.Gen, k.off, job))
		}
	}
	writeIds(jd, idsOf(nl, ents), !s.linksKept())
	s.forget(jd, refs, fates, id)
	cacheSummary(jd, total, nl.Gen, nl.End)
	return true, nil
}

// kept is an execution that prune's next generation of a log keeps:
// where its one frame is.
type kept struct {
	id       string
	off      int64
	terminal bool
}

// writeNext writes the next generation of job's log l (in jd), its
// header holding base, with each execution fates keeps, and renames it
// into place, the log's index removed first (a reader reads the log of a
// job without one). It returns the new log, open, and where each kept
// execution is in it; renamed says the new log is in place, even with an
// error (which came after). Called with the lock held.
func writeNext(jd dirh, l *jobLog, job string, refs []execRef, fates []fate, base jobSummary) (nl *jobLog, keep []kept, renamed bool, err error) {
	// The header keeps the job's greatest token, whichever claims go: a
	// claim after the prune must be given a greater one.
	tok, err := l.lastToken()
	if err != nil {
		// A log not whole (verify --repair writes it anew): the
		// greatest token of the executions it holds.
		tok = l.removed().token
		for _, ref := range refs {
			if r, err := l.version(ref); err == nil {
				tok = max(tok, r.Token)
			}
		}
	}
	base.token = max(base.token, tok)
	w, err := newLogWriter(jd, job, l.Gen+1, base)
	if err != nil {
		return nil, nil, false, err
	}
	for i, ref := range refs {
		if fates[i].drop {
			continue
		}
		r, err := l.version(ref)
		if err != nil {
			w.Abort()
			return nil, nil, false, err
		}
		keep = append(keep, kept{r.ID, w.Add(joblog.KindClaim, r.ID, 0, wire.Encode(r)), r.Status.Terminal()})
	}
	if err := unix.Unlinkat(jd.FD, jobindex.Name, 0); err != nil && err != unix.ENOENT {
		w.Abort()
		return nil, nil, false, &os.PathError{Op: "unlink", Path: jd.Show(jobindex.Name), Err: err}
	}
	if nl, err = w.commit(); err != nil {
		if !w.Renamed {
			// The log stays: so does its index, best effort.
			if ids, _, ierr := idsOfLog(l); ierr == nil {
				writeIds(jd, ids, false)
			}
		}
		return nil, nil, w.Renamed, err
	}
	return nl, keep, true, nil
}

// forget removes what named each execution fates drops, now gone from
// its job's log (id reads an execution's id from the old one): its slot
// where the slot is free again, and its output. Called with the lock
// held.
func (s *Store) forget(jd dirh, refs []execRef, fates []fate, id func(execRef) (string, error)) {
	gone := make([]string, 0, min(len(refs), pruneOutputBatch))
	for i, ref := range refs {
		f := fates[i]
		if !f.drop {
			continue
		}
		dropped, err := id(ref)
		if err != nil {
			continue // the old log, read whole a moment ago
		}
		if f.instant != 0 && !ledger.BlocksInstant(f.status) {
			key := instantKey(time.Unix(0, f.instant))
			if b, err := readSlot(jd, key); err == nil && strings.TrimSpace(string(b)) == dropped {
				unix.Unlinkat(jd.FD, key, 0)
			}
		}
		if gone = append(gone, dropped); len(gone) == cap(gone) {
			s.pruneOutputs(gone, false)
			gone = gone[:0]
		}
	}
	s.pruneOutputs(gone, false)
}

// bury turns the slot of each dropped completed or unknown execution
// into a tombstone, durably (id reads an execution's id). Called with the
// lock held.
func bury(jd dirh, job string, refs []execRef, fates []fate, id func(execRef) (string, error)) error {
	tombstones := false
	for i, f := range fates {
		if !f.drop || f.instant == 0 || !ledger.BlocksInstant(f.status) {
			continue
		}
		dropped, err := id(refs[i])
		if err != nil {
			return err
		}
		key := instantKey(time.Unix(0, f.instant))
		if b, err := readSlot(jd, key); err == nil {
			if fs := strings.Fields(string(b)); len(fs) > 0 && fs[0] != dropped {
				continue // the slot names another execution
			}
		}
		if err := setLink(jd, key, dropped+" "+string(f.status)); err != nil {
			return fmt.Errorf("pruning %s: %w", dropped, err)
		}
		tombstones = true
	}
	if tombstones {
		if err := jd.Sync(); err != nil {
			return fmt.Errorf("pruning %s: %w", job, err)
		}
	}
	return nil
}

// pruneOutputBatch is how many dropped executions' outputs Prune removes
// at a time: what it holds of their ids.
const pruneOutputBatch = 4096

// pruneLeftovers deletes d's temporary files, reading its names in
// batches.
func (s *Store) pruneLeftovers(d dirh) {
	f, err := openListing(d)
	if err != nil {
		return
	}
	defer f.Close()
	for {
		names, err := f.Readdirnames(1024)
		for _, n := range names {
			if strings.HasPrefix(n, tmpPrefix) {
				unix.Unlinkat(d.FD, n, 0)
			}
		}
		if err != nil {
			return
		}
	}
}
