package filestore

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/internal/durable"
	"github.com/tether-sh/tether/lib/ledger"
)

// Prune deletes terminal records (never claimed or running ones) selected
// by o, passes each to fn (if not nil) as it was before the prune, and
// returns how many it deleted. The (job, instant) of a pruned completed or
// unknown execution stays taken: its slot becomes a tombstone first. Prune
// also deletes files left behind by interrupted writes. Unreadable records
// are never deleted; they are reported in the error.
//
// It works job by job (in name order), and within a job reads its records
// newest first, deciding each as it goes (the newest o.Keep terminal ones
// stay), so that it holds no record: only the ids, statuses and instants
// of what it drops. fn's records are read again, oldest first, before any
// of the job's is deleted. With o.Job it reads that job's directory and
// records only, and active/ (which holds only executions not yet
// finished): after each finish, Prune{Job, Keep} costs what the job keeps,
// not what the store holds.
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
		jobs = jobs[:0]
		for _, n := range names {
			if ledger.ValidJob(n) == nil {
				jobs = append(jobs, n)
			} else if strings.HasPrefix(n, tmpPrefix) && !o.DryRun {
				unix.Unlinkat(s.jobs.FD, n, 0)
			}
		}
	}
	if !o.DryRun {
		// Finished executions are counted into their job's summary
		// before any is deleted.
		s.pruneActive(o.Job)
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
		s.pruneExecLeftovers()
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

// dropped is what Prune keeps of a record it drops.
type dropped struct {
	id      string
	status  ledger.Status
	instant time.Time
}

// job is Prune for one job's records. Called with the lock held.
func (p *pruner) job(job string) error {
	s, o := p.s, p.o
	jd, err := openSubdir(s.jobs, job)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(jd.FD)
	names, err := readNames(jd)
	if err != nil {
		return err
	}
	var drop []dropped  // newest first, until reversed below
	var latest []string // the two newest records that stay
	var errs []error
	kept := 0
	for i := len(names) - 1; i >= 0; i-- {
		n := names[i]
		switch {
		case strings.HasPrefix(n, tmpPrefix):
			if !o.DryRun {
				unix.Unlinkat(jd.FD, n, 0) // no writer runs: we hold the lock
			}
			continue
		case ledger.ValidID(n) != nil:
			continue
		}
		r, err := s.readRecord(n)
		switch {
		case errors.Is(err, ledger.ErrNotFound):
			if !o.DryRun && s.missing(n) {
				unix.Unlinkat(jd.FD, n, 0) // a claim that died before its rename
			}
			continue
		case err != nil:
			errs = append(errs, err)
			continue
		case r.Job != job:
			continue
		}
		stays := !r.Status.Terminal() || kept < o.Keep ||
			(o.OlderThan > 0 && p.now.Sub(r.FinishedAt) < o.OlderThan)
		if r.Status.Terminal() && stays {
			kept++
		}
		if !stays && !o.DryRun && s.marked(r) {
			stays = true // not counted in the summary: its settle failed
		}
		if stays {
			if len(latest) < 2 {
				latest = append(latest, r.ID)
			}
			continue
		}
		drop = append(drop, dropped{r.ID, r.Status, r.Instant})
	}
	slices.Reverse(drop)
	p.count += len(drop)
	p.pass(drop)
	if o.DryRun || len(drop) == 0 {
		return errors.Join(errs...)
	}
	if err := s.dropRecords(jd, drop, latest); err != nil {
		return errors.Join(append(errs, err)...)
	}
	return errors.Join(errs...)
}

// pass reads each of drop again and hands it to fn, oldest first.
func (p *pruner) pass(drop []dropped) {
	if p.fn == nil {
		return
	}
	for _, d := range drop {
		if p.fnErr != nil {
			return
		}
		if r, err := p.s.readRecord(d.id); err == nil {
			p.fnErr = p.fn(r)
		}
	}
}

// dropRecords deletes drop, records of the job whose directory is jd,
// crash-safely, and points the job's latest pointer at the newest two of
// what stays (latest, newest first). Called with the lock held.
func (s *Store) dropRecords(jd dirh, drop []dropped, latest []string) error {
	// 1. Tombstones, durable before any record disappears.
	for _, r := range drop {
		if r.instant.IsZero() || !ledger.BlocksInstant(r.status) {
			continue
		}
		key := instantKey(r.instant)
		if b, err := readSmall(jd, key, 256); err == nil {
			if f := strings.Fields(string(b)); len(f) > 0 && f[0] != r.id {
				continue // the slot names another execution
			}
		}
		if err := durable.Write(jd, key, []byte(r.id+" "+string(r.status)+"\n"), true); err != nil {
			return fmt.Errorf("pruning %s: %w", r.id, err)
		}
	}
	if err := jd.Sync(); err != nil {
		return fmt.Errorf("pruning: %w", err)
	}
	// 2. The records.
	for _, r := range drop {
		if err := unix.Unlinkat(s.exec.FD, r.id, 0); err != nil && err != unix.ENOENT {
			return fmt.Errorf("pruning %s: %w", r.id, err)
		}
	}
	reached("prune-unlinked")
	if err := s.exec.Sync(); err != nil {
		return fmt.Errorf("pruning: %w", err)
	}
	// 3. Membership markers, outputs, free slots and the pointer; nothing
	// here needs to be durable (each is verified against exec/ when read).
	gone := make(map[string]bool, len(drop))
	ids := make([]string, len(drop))
	for i, r := range drop {
		gone[r.id] = true
		ids[i] = r.id
		unix.Unlinkat(jd.FD, r.id, 0)
	}
	s.pruneOutputs(ids, false)
	names, _ := readNames(jd)
	s.pruneSlots(jd, names, gone)
	var err error
	switch len(latest) {
	case 0:
		err = unix.Unlinkat(jd.FD, latestName, 0)
		if err == unix.ENOENT {
			err = nil
		}
	case 1:
		err = durable.Write(jd, latestName, []byte(latest[0]+"\n"), false)
	default:
		err = durable.Write(jd, latestName, []byte(latest[0]+" "+latest[1]+"\n"), false)
	}
	if err == nil {
		err = jd.Sync()
	}
	if err != nil {
		return fmt.Errorf("pruning %s: %w", jd.Path, err)
	}
	return nil
}

// pruneSlots frees the @INSTANT slots of dropped failed/abandoned
// executions (a slot naming a dropped completed or unknown one is a
// tombstone by now, with a status).
func (s *Store) pruneSlots(jd dirh, names []string, dropped map[string]bool) {
	if len(dropped) == 0 {
		return
	}
	for _, n := range names {
		if !strings.HasPrefix(n, "@") {
			continue
		}
		b, err := readSmall(jd, n, 256)
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b)); len(f) == 1 && dropped[f[0]] {
			unix.Unlinkat(jd.FD, n, 0)
		}
	}
}

// pruneActive drops the active markers (of job, or of every job) that name
// a missing record, and settles those that name a terminal one.
func (s *Store) pruneActive(job string) {
	var done []ledger.Record
	s.scanActive(func(id, j string) error {
		if job != "" && j != job {
			return nil
		}
		r, err := s.readRecord(id)
		switch {
		case errors.Is(err, ledger.ErrNotFound):
			if s.missing(id) {
				s.dropActive(id, j)
			}
		case err == nil && r.Status.Terminal() && r.Job == j:
			done = append(done, r)
		}
		return nil
	})
	s.settleAll(done)
	names, _ := readNames(s.active)
	for _, n := range names {
		if strings.HasPrefix(n, tmpPrefix) {
			unix.Unlinkat(s.active.FD, n, 0)
		}
	}
}

// pruneExecLeftovers deletes exec/'s temporary files (the spare too: the
// next update creates a new one), reading its names in batches.
func (s *Store) pruneExecLeftovers() {
	f, err := openListing(s.exec)
	if err != nil {
		return
	}
	defer f.Close()
	for {
		names, err := f.Readdirnames(1024)
		for _, n := range names {
			if strings.HasPrefix(n, tmpPrefix) {
				unix.Unlinkat(s.exec.FD, n, 0)
			}
		}
		if err != nil {
			return
		}
	}
}

// marked reports whether r still has its active marker.
func (s *Store) marked(r ledger.Record) bool {
	var st unix.Stat_t
	return unix.Fstatat(s.active.FD, activeName(r.ID, r.Job), &st, unix.AT_SYMLINK_NOFOLLOW) == nil
}
