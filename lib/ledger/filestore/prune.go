package filestore

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/internal/durable"
	"github.com/tether-sh/tether/lib/ledger"
)

// Prune deletes terminal records (never claimed or running ones) selected
// by o and returns them. The (job, instant) of a pruned completed or unknown
// execution stays taken: its slot becomes a tombstone first. Prune also
// deletes files left behind by interrupted writes. Unreadable records are
// never deleted; they are reported in the error.
//
// It works job by job, reading one job's records at a time, so that its
// memory is bounded by the largest job (and what it returns); with o.Job
// it reads that job's directory and records only, and active/ (which holds
// only executions not yet finished): after each finish, Prune{Job, Keep}
// costs what the job keeps, not what the store holds.
func (s *Store) Prune(o ledger.PruneOptions) ([]ledger.Record, error) {
	if o.Keep < 0 || o.OlderThan < 0 {
		return nil, ledger.BadInputf("--keep and --older-than must not be negative")
	}
	jobs := []string{o.Job}
	if o.Job != "" {
		if err := ledger.ValidJob(o.Job); err != nil {
			return nil, err
		}
	}
	unlock, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if o.Job == "" {
		names, err := readNames(s.jobs)
		if err != nil {
			return nil, err
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
	now := s.clock()
	var drop []ledger.Record
	var errs []error
	for _, job := range jobs {
		d, err := s.pruneJob(job, o, now)
		drop = append(drop, d...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	sort.Slice(drop, func(i, j int) bool { return drop[i].ID < drop[j].ID })
	if o.DryRun {
		return drop, errors.Join(errs...)
	}
	s.pruneOutputs(drop, o.Job == "")
	if o.Job == "" {
		s.pruneExecLeftovers()
	}
	return drop, errors.Join(errs...)
}

// pruneJob is Prune for one job's records. Called with the lock held.
func (s *Store) pruneJob(job string, o ledger.PruneOptions, now time.Time) ([]ledger.Record, error) {
	jd, err := openSubdir(s.jobs, job)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer unix.Close(jd.FD)
	names, err := readNames(jd)
	if err != nil {
		return nil, err
	}
	var recs []ledger.Record // every readable record, oldest first
	var errs []error
	for _, n := range names {
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
		case err != nil:
			errs = append(errs, err)
		case r.Job == job:
			recs = append(recs, r)
		}
	}
	var drop []ledger.Record
	kept := 0
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		if !r.Status.Terminal() {
			continue
		}
		if kept < o.Keep || (o.OlderThan > 0 && now.Sub(r.FinishedAt) < o.OlderThan) {
			kept++
			continue
		}
		if !o.DryRun && s.marked(r) {
			continue // not counted in the summary: its settle failed
		}
		drop = append(drop, r)
	}
	sort.Slice(drop, func(i, j int) bool { return drop[i].ID < drop[j].ID })
	if o.DryRun || len(drop) == 0 {
		if !o.DryRun {
			s.pruneSlots(jd, names, nil)
		}
		return drop, errors.Join(errs...)
	}
	if err := s.dropRecords(jd, recs, drop); err != nil {
		return nil, errors.Join(append(errs, err)...)
	}
	return drop, errors.Join(errs...)
}

// dropRecords deletes drop, records of the job whose directory is jd and
// whose readable records are recs, crash-safely. Called with the lock held.
func (s *Store) dropRecords(jd dirh, recs, drop []ledger.Record) error {
	// 1. Tombstones, durable before any record disappears.
	for _, r := range drop {
		if r.Instant.IsZero() || !ledger.BlocksInstant(r.Status) {
			continue
		}
		key := instantKey(r.Instant)
		if b, err := readSmall(jd, key, 256); err == nil {
			if f := strings.Fields(string(b)); len(f) > 0 && f[0] != r.ID {
				continue // the slot names another execution
			}
		}
		if err := durable.Write(jd, key, []byte(r.ID+" "+string(r.Status)+"\n"), true); err != nil {
			return fmt.Errorf("pruning %s: %w", r.ID, err)
		}
	}
	if err := jd.Sync(); err != nil {
		return fmt.Errorf("pruning: %w", err)
	}
	// 2. The records.
	for _, r := range drop {
		if err := unix.Unlinkat(s.exec.FD, r.ID, 0); err != nil && err != unix.ENOENT {
			return fmt.Errorf("pruning %s: %w", r.ID, err)
		}
	}
	reached("prune-unlinked")
	if err := s.exec.Sync(); err != nil {
		return fmt.Errorf("pruning: %w", err)
	}
	// 3. Membership markers, free slots and the pointer; nothing here
	// needs to be durable (each is verified against exec/ when read).
	dropped := map[string]bool{}
	for _, r := range drop {
		dropped[r.ID] = true
		unix.Unlinkat(jd.FD, r.ID, 0)
	}
	names, _ := readNames(jd)
	s.pruneSlots(jd, names, dropped)
	var remain []string
	for _, r := range recs {
		if !dropped[r.ID] {
			remain = append(remain, r.ID)
		}
	}
	var err error
	switch len(remain) {
	case 0:
		err = unix.Unlinkat(jd.FD, latestName, 0)
		if err == unix.ENOENT {
			err = nil
		}
	case 1:
		err = durable.Write(jd, latestName, []byte(remain[0]+"\n"), false)
	default:
		err = durable.Write(jd, latestName, []byte(remain[len(remain)-1]+" "+remain[len(remain)-2]+"\n"), false)
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
