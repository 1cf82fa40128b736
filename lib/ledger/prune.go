package ledger

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/internal/durable"
)

// PruneOptions select the terminal records Prune drops. The zero value
// drops every terminal record.
type PruneOptions struct {
	// Job, if set, limits the prune to that job's records.
	Job string
	// Keep keeps the Keep newest terminal records of each job.
	Keep int
	// OlderThan, if not zero, drops only records finished more than
	// OlderThan ago.
	OlderThan time.Duration
	// DryRun selects and returns the records as Prune would, and deletes
	// nothing (not even the leftovers of interrupted writes).
	DryRun bool
}

// Prune deletes terminal records (never claimed or running ones) selected
// by o and returns them. The (job, instant) of a pruned completed or unknown
// execution stays taken: its slot becomes a tombstone first. Prune also
// deletes files left behind by interrupted writes. Unreadable records are
// never deleted; they are reported in the error.
func (s *Store) Prune(o PruneOptions) ([]Record, error) {
	if o.Keep < 0 || o.OlderThan < 0 {
		return nil, badInputf("--keep and --older-than must not be negative")
	}
	if o.Job != "" {
		if err := ValidJob(o.Job); err != nil {
			return nil, err
		}
	}
	unlock, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	now := s.clock()

	names, err := readNames(s.exec)
	if err != nil {
		return nil, err
	}
	var errs []error
	byJob := map[string][]Record{} // every readable record, oldest first
	for _, n := range names {
		if strings.HasPrefix(n, tmpPrefix) {
			if !o.DryRun {
				unix.Unlinkat(s.exec.FD, n, 0) // no writer runs: we hold the lock
			}
			continue
		}
		if ValidID(n) != nil {
			continue
		}
		r, err := s.readRecord(n)
		if err != nil {
			if !errors.Is(err, ErrNotFound) {
				errs = append(errs, err)
			}
			continue
		}
		byJob[r.Job] = append(byJob[r.Job], r)
	}

	var drop []Record
	for job, recs := range byJob {
		if o.Job != "" && job != o.Job {
			continue
		}
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
			drop = append(drop, r)
		}
	}
	sort.Slice(drop, func(i, j int) bool { return drop[i].ID < drop[j].ID })
	if o.DryRun {
		return drop, errors.Join(errs...)
	}
	if len(drop) == 0 {
		s.pruneLeftovers(byJob, nil)
		return nil, errors.Join(errs...)
	}

	// 1. Tombstones and the counts of what is dropped, durable before any
	// record disappears.
	touched := map[string]dirh{}
	defer func() {
		for _, jd := range touched {
			unix.Close(jd.FD)
		}
	}()
	dropByJob := map[string][]Record{}
	for _, r := range drop {
		dropByJob[r.Job] = append(dropByJob[r.Job], r)
	}
	for _, r := range drop {
		jobDir, ok := touched[r.Job]
		if !ok {
			if jobDir, err = openSubdir(s.jobs, r.Job); err != nil {
				return nil, fmt.Errorf("pruning %s: %w", r.ID, err)
			}
			touched[r.Job] = jobDir
			if err := writePruned(jobDir, byJob[r.Job], dropByJob[r.Job]); err != nil {
				return nil, fmt.Errorf("pruning %s: %w", r.Job, err)
			}
		}
		if r.Instant.IsZero() || !blocksInstant(r.Status) {
			continue
		}
		key := instantKey(r.Instant)
		if b, err := readSmall(jobDir, key, 256); err == nil {
			if f := strings.Fields(string(b)); len(f) > 0 && f[0] != r.ID {
				continue // the slot names another execution
			}
		}
		if err := durable.Write(jobDir, key, []byte(r.ID+" "+string(r.Status)+"\n"), true); err != nil {
			return nil, fmt.Errorf("pruning %s: %w", r.ID, err)
		}
	}
	for _, jobDir := range touched {
		if err := jobDir.Sync(); err != nil {
			return nil, fmt.Errorf("pruning: %w", err)
		}
	}
	// 2. The records.
	for _, r := range drop {
		if err := unix.Unlinkat(s.exec.FD, r.ID, 0); err != nil && err != unix.ENOENT {
			return nil, fmt.Errorf("pruning %s: %w", r.ID, err)
		}
	}
	if err := s.exec.Sync(); err != nil {
		return nil, fmt.Errorf("pruning: %w", err)
	}
	s.pruneOutputs(drop)
	// 3. Membership markers, free slots, pointers and stale files.
	dropped := map[string]bool{}
	for _, r := range drop {
		dropped[r.ID] = true
	}
	s.pruneLeftovers(byJob, dropped)
	for job, jobDir := range touched {
		var remain []string
		for _, r := range byJob[job] {
			if !dropped[r.ID] {
				remain = append(remain, r.ID)
			}
		}
		var err error
		switch len(remain) {
		case 0:
			err = unix.Unlinkat(jobDir.FD, latestName, 0)
			if err == unix.ENOENT {
				err = nil
			}
		case 1:
			err = durable.Write(jobDir, latestName, []byte(remain[0]+"\n"), false)
		default:
			err = durable.Write(jobDir, latestName, []byte(remain[len(remain)-1]+" "+remain[len(remain)-2]+"\n"), false)
		}
		if err == nil {
			err = jobDir.Sync()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("pruning %s: %w", jobDir.Path, err))
		}
	}
	return drop, errors.Join(errs...)
}

// pruneLeftovers removes, in every job directory, the markers of dropped or
// missing records, the slots of dropped failed/abandoned executions,
// temporary files, and stale active markers. byJob holds every readable
// record. Called with the lock held; nothing here needs to be durable.
func (s *Store) pruneLeftovers(byJob map[string][]Record, dropped map[string]bool) {
	stored := map[string]Record{}
	for _, recs := range byJob {
		for _, r := range recs {
			if !dropped[r.ID] {
				stored[r.ID] = r
			}
		}
	}
	jobs, _ := readNames(s.jobs)
	for _, job := range jobs {
		if ValidJob(job) != nil {
			continue
		}
		s.pruneJobLeftovers(job, stored, dropped)
	}
	s.scanActive(func(id, job string) error {
		if r, ok := stored[id]; !ok || r.Status.Terminal() {
			if s.missing(id) || ok {
				s.dropActive(id, job)
			}
		}
		return nil
	})
	for _, d := range []dirh{s.active, s.jobs} {
		names, _ := readNames(d)
		for _, n := range names {
			if strings.HasPrefix(n, tmpPrefix) {
				unix.Unlinkat(d.FD, n, 0)
			}
		}
	}
}

// pruneJobLeftovers is pruneLeftovers in the directory of job.
func (s *Store) pruneJobLeftovers(job string, stored map[string]Record, dropped map[string]bool) {
	jobDir, err := openSubdir(s.jobs, job)
	if err != nil {
		return
	}
	defer unix.Close(jobDir.FD)
	names, err := readNames(jobDir)
	if err != nil {
		return
	}
	for _, n := range names {
		switch {
		case strings.HasPrefix(n, tmpPrefix):
			unix.Unlinkat(jobDir.FD, n, 0)
		case strings.HasPrefix(n, "@"):
			b, err := readSmall(jobDir, n, 256)
			if err != nil {
				continue
			}
			f := strings.Fields(string(b))
			if len(f) == 1 && dropped[f[0]] {
				unix.Unlinkat(jobDir.FD, n, 0) // a failed/abandoned holder: free anyway
			}
		case ValidID(n) == nil:
			if r, ok := stored[n]; !ok || r.Job != job {
				if s.missing(n) {
					unix.Unlinkat(jobDir.FD, n, 0)
				}
			}
		}
	}
}
