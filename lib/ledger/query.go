package ledger

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/internal/durable"
)

// pointer reads job's _latest pointer: the newest claim and the one before
// it. ok is false when the pointer is missing or garbled; err is set only
// for a pointer file (or job directory) that is not safely ours.
func (s *Store) pointer(job string) (head, prev string, ok bool, err error) {
	jd, err := openSubdir(s.jobs, job)
	if errors.Is(err, os.ErrNotExist) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, err
	}
	defer unix.Close(jd.FD)
	return pointerIn(jd)
}

// pointerIn is pointer for the job directory jd.
func pointerIn(jd dirh) (head, prev string, ok bool, err error) {
	b, err := readSmall(jd, latestName, 256)
	if errors.Is(err, ErrUnsafeStore) {
		return "", "", false, err
	}
	if err != nil {
		return "", "", false, nil
	}
	f := strings.Fields(string(b))
	if len(f) < 1 || len(f) > 2 || ValidID(f[0]) != nil {
		return "", "", false, nil
	}
	if len(f) == 2 {
		if ValidID(f[1]) != nil {
			return "", "", false, nil
		}
		prev = f[1]
	}
	return f[0], prev, true, nil
}

// latestIn returns the id of the newest stored execution of the job whose
// directory is jd, "" if it has none, checking existence only (the claim
// path).
func (s *Store) latestIn(jd dirh) (string, error) {
	exists := func(id string) bool { return s.stored(id) }
	head, prev, ok, err := pointerIn(jd)
	if err != nil {
		return "", err
	}
	if ok {
		if exists(head) {
			return head, nil
		}
		if prev == "" {
			return "", nil
		}
		if exists(prev) {
			return prev, nil
		}
	}
	ids, err := jobIDsIn(jd)
	if err != nil {
		return "", err
	}
	for i := len(ids) - 1; i >= 0; i-- {
		if exists(ids[i]) {
			return ids[i], nil
		}
	}
	return "", nil
}

// stored reports whether exec/ID exists.
func (s *Store) stored(id string) bool {
	var st unix.Stat_t
	return unix.Fstatat(s.exec.FD, id, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
}

// missing reports whether exec/ID does not exist.
func (s *Store) missing(id string) bool {
	var st unix.Stat_t
	return unix.Fstatat(s.exec.FD, id, &st, unix.AT_SYMLINK_NOFOLLOW) == unix.ENOENT
}

// Latest returns job's newest execution (the last one claimed). It reads
// the job's _latest pointer and at most two records; only a pointer left
// garbled or dangling by a crash or an interrupted prune costs a read of the
// job's directory.
func (s *Store) Latest(job string) (Record, error) {
	if err := ValidJob(job); err != nil {
		return Record{}, err
	}
	try := func(id string) (Record, bool, error) {
		r, err := s.readRecord(id)
		if errors.Is(err, ErrNotFound) {
			return Record{}, false, nil
		}
		if err != nil {
			return Record{}, false, err
		}
		return r, r.Job == job, nil
	}
	head, prev, ok, err := s.pointer(job)
	if err != nil {
		return Record{}, err
	}
	if ok {
		r, found, err := try(head)
		if found || err != nil {
			return r, err
		}
		if prev != "" {
			if r, found, err = try(prev); found || err != nil {
				return r, err
			}
		}
	}
	ids, err := s.jobIDs(job)
	if err != nil {
		return Record{}, err
	}
	for i := len(ids) - 1; i >= 0; i-- {
		r, found, err := try(ids[i])
		if found || err != nil {
			return r, err
		}
	}
	return Record{}, &kindError{kind: ErrNotFound, msg: "job " + job + " has no execution"}
}

// Filter selects executions for List; empty fields match everything.
type Filter struct {
	Job    string
	Status Status
}

// List returns the executions matching f, oldest first. Records that cannot
// be read are left out and reported together in the error (wrapping
// ErrCorrupt), so the others are still listed.
func (s *Store) List(f Filter) ([]Record, error) {
	if f.Job != "" {
		if err := ValidJob(f.Job); err != nil {
			return nil, err
		}
	}
	if f.Status != "" && !f.Status.Valid() {
		_, err := ParseStatus(string(f.Status))
		return nil, err
	}
	var ids []string
	var err error
	if f.Job != "" {
		ids, err = s.jobIDs(f.Job)
	} else {
		ids, err = s.execIDs()
	}
	if err != nil {
		return nil, err
	}
	var out []Record
	var errs []error
	for _, id := range ids {
		r, err := s.readRecord(id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if (f.Job == "" || r.Job == f.Job) && (f.Status == "" || r.Status == f.Status) {
			out = append(out, r)
		}
	}
	return out, errors.Join(errs...)
}

// execIDs returns the ids of every stored record, oldest first.
func (s *Store) execIDs() ([]string, error) {
	names, err := readNames(s.exec)
	if err != nil {
		return nil, err
	}
	return validIDs(names), nil
}

// PruneOptions select the terminal records Prune drops. The zero value
// drops every terminal record.
type PruneOptions struct {
	// Keep keeps the Keep newest terminal records of each job.
	Keep int
	// OlderThan, if not zero, drops only records finished more than
	// OlderThan ago.
	OlderThan time.Duration
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
			unix.Unlinkat(s.exec.FD, n, 0) // no writer runs: we hold the lock
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
	for _, recs := range byJob {
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
	if len(drop) == 0 {
		s.pruneLeftovers(byJob, nil)
		return nil, errors.Join(errs...)
	}

	// 1. Tombstones, durable before any record disappears.
	touched := map[string]dirh{}
	defer func() {
		for _, jd := range touched {
			unix.Close(jd.FD)
		}
	}()
	for _, r := range drop {
		jobDir, ok := touched[r.Job]
		if !ok {
			if jobDir, err = openSubdir(s.jobs, r.Job); err != nil {
				return nil, fmt.Errorf("pruning %s: %w", r.ID, err)
			}
			touched[r.Job] = jobDir
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
