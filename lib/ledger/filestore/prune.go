package filestore

import (
	"errors"
	"fmt"
	"os"
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
// It works job by job (in name order), and within a job reads its newest
// records until the newest o.Keep terminal ones (which stay) are found,
// then the rest oldest first, deciding each as it goes and deleting what
// goes pruneBatch at a time: it holds the job's names and one batch's
// ids, statuses and instants, never its records. fn gets each record
// oldest first, as read, before it is deleted. With o.Job it reads that
// job's directory and records only, and active/ (which holds only
// executions not yet finished): after each finish, Prune{Job, Keep} costs
// what the job keeps, not what the store holds.
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

// dropped is what Prune keeps of a record it drops: at 100,000 dropped,
// every byte here is 100 KB of its peak memory.
type dropped struct {
	id      string
	status  ledger.Status
	instant time.Time
}

// pruneBatch is how many records Prune deletes at a time: what it holds
// of them, and two directory flushes per batch (a variable for tests).
var pruneBatch = 4096

// job is Prune for one job's records. Called with the lock held.
//
// Newest first, it reads records until o.Keep terminal ones are kept:
// those all stay. Oldest first, it decides the rest, each of which stays
// only if live, younger than o.OlderThan or not yet counted in the summary,
// and drops them pruneBatch at a time; so it holds the job's names and one
// batch, never its records.
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
	var errs []error
	read := func(n string) (ledger.Record, bool) {
		r, err := p.read(jd, job, n)
		if err != nil {
			errs = append(errs, err)
		}
		return r, err == nil && r.ID != ""
	}
	var latest []string // the two newest records that stay, newest first
	cut, kept := len(names), 0
	for cut > 0 && kept < o.Keep {
		cut--
		r, ok := read(names[cut])
		if !ok {
			continue
		}
		if r.Status.Terminal() {
			kept++
		}
		if len(latest) < 2 {
			latest = append(latest, r.ID)
		}
	}
	var older []string // the two newest of the rest that stay, newest last
	batch := make([]dropped, 0, min(cut, pruneBatch))
	deleted := false // some of the job's records are gone
	for _, n := range names[:cut] {
		r, ok := read(n)
		if !ok {
			continue
		}
		stays := !r.Status.Terminal() || o.OlderThan > 0 && p.now.Sub(r.FinishedAt) < o.OlderThan
		if !stays && !o.DryRun && s.marked(r) {
			stays = true // not counted in the summary: its settle failed
		}
		if stays {
			older = append(older[max(0, len(older)-1):], r.ID)
			continue
		}
		p.count++
		if p.fn != nil && p.fnErr == nil {
			p.fnErr = p.fn(r) // as read: before the prune
		}
		if o.DryRun {
			continue
		}
		batch = append(batch, dropped{n, r.Status, r.Instant}) // n, not a copy: r.ID == n
		if len(batch) == cap(batch) {
			if err := s.dropRecords(jd, batch); err != nil {
				return errors.Join(append(errs, err)...)
			}
			batch, deleted = batch[:0], true
		}
	}
	if len(batch) > 0 {
		if err := s.dropRecords(jd, batch); err != nil {
			return errors.Join(append(errs, err)...)
		}
		deleted = true
	}
	if deleted {
		for i := len(older) - 1; i >= 0 && len(latest) < 2; i-- {
			latest = append(latest, older[i])
		}
		if err := pointLatest(jd, latest); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// read returns the record named n in job's directory jd, or a zero record
// when n names none to decide: a leftover (removed unless DryRun), another
// job's, or one that cannot be read (the error; it is never deleted).
func (p *pruner) read(jd dirh, job, n string) (ledger.Record, error) {
	s := p.s
	switch {
	case strings.HasPrefix(n, tmpPrefix):
		if !p.o.DryRun {
			unix.Unlinkat(jd.FD, n, 0) // no writer runs: we hold the lock
		}
		return ledger.Record{}, nil
	case ledger.ValidID(n) != nil:
		return ledger.Record{}, nil
	}
	r, err := s.readRecord(n)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		if !p.o.DryRun && s.missing(n) {
			unix.Unlinkat(jd.FD, n, 0) // a claim that died before its rename
		}
		return ledger.Record{}, nil
	case err != nil:
		return ledger.Record{}, err
	case r.Job != job:
		return ledger.Record{}, nil
	}
	return r, nil
}

// dropRecords deletes drop, records of the job whose directory is jd,
// crash-safely. Called with the lock held.
func (s *Store) dropRecords(jd dirh, drop []dropped) error {
	// 1. Tombstones, durable before any record disappears.
	tombstones := false
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
		tombstones = true
	}
	if tombstones {
		if err := jd.Sync(); err != nil {
			return fmt.Errorf("pruning: %w", err)
		}
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
	// 3. Membership markers, outputs and free slots; nothing here needs
	// to be durable (each is verified against exec/ when read).
	ids := make([]string, len(drop))
	for i, r := range drop {
		ids[i] = r.id
		unix.Unlinkat(jd.FD, r.id, 0)
	}
	s.pruneOutputs(ids, false)
	pruneSlots(jd, drop)
	return nil
}

// pointLatest points the job's latest pointer at the newest two of what
// stays (latest, newest first), once its dropped records are gone.
func pointLatest(jd dirh, latest []string) error {
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
// tombstone by now, with a status). A slot is named after its
// execution's instant: each dropped record's is read, not every slot.
func pruneSlots(jd dirh, drop []dropped) {
	for _, r := range drop {
		if r.instant.IsZero() {
			continue
		}
		key := instantKey(r.instant)
		b, err := readSmall(jd, key, 256)
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b)); len(f) == 1 && f[0] == r.id {
			unix.Unlinkat(jd.FD, key, 0)
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
