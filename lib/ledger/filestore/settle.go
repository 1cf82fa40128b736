package filestore

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/ledger"
)

// settleAfter is how many active markers a job may have before a finish
// settles its terminal ones: below it, a finish writes its record alone,
// and its marker, now naming a terminal record, waits for the next
// settle, counted by readers meanwhile.
const settleAfter = 8

// maybeSettle settles job's finished executions once it has more than
// settleAfter active markers. Called with the lock held, after a finish;
// failing, it leaves the markers for the next settle.
func (s *Store) maybeSettle(job string) {
	names, err := readNames(s.active)
	if err != nil {
		return
	}
	var ids []string
	for _, n := range names {
		if id, j, ok := strings.Cut(n, "."); ok && j == job && ledger.ValidID(id) == nil {
			ids = append(ids, id)
		}
	}
	if len(ids) <= settleAfter {
		return
	}
	var done []ledger.Record
	for _, id := range ids {
		if r, err := s.readRecord(id); err == nil && r.Job == job && r.Status.Terminal() {
			done = append(done, r)
		}
	}
	s.settle(job, done)
}

// settleAll settles the terminal records in done, job by job.
func (s *Store) settleAll(done []ledger.Record) error {
	byJob := map[string][]ledger.Record{}
	for _, r := range done {
		byJob[r.Job] = append(byJob[r.Job], r)
	}
	var errs []error
	for job, recs := range byJob {
		if err := s.settle(job, recs); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// settle counts done, terminal records of job still marked active, into
// its summary (those not counted already), durably, and then drops their
// markers. Called with the lock held, after they were made durable. If
// the summary cannot be written the markers stay, for the next settle.
func (s *Store) settle(job string, done []ledger.Record) error {
	if len(done) == 0 {
		return nil
	}
	jd, err := openSubdir(s.jobs, job)
	if err != nil {
		return fmt.Errorf("summary of %s: %w", job, err)
	}
	defer unix.Close(jd.FD)
	js, err := readSummary(jd, job)
	changed := false
	if err != nil {
		// A damaged summary is rebuilt from the records, done among them
		// (counts of pruned executions are lost with it).
		if js, err = s.rebuildSummary(job); err != nil {
			return err
		}
		changed = true
	} else {
		for _, r := range done {
			if js.count(r) {
				changed = true
			}
		}
	}
	if changed {
		// "counted" keeps at least this whole batch: its markers go next.
		js.trimCounted(max(maxCounted, len(done)))
		reached("settle")
		if err := s.rep.Replace(jd, summaryName, js.Encode()); err != nil {
			return fmt.Errorf("summary of %s: %w", job, err)
		}
	}
	for _, r := range done {
		s.dropActive(r.ID, job)
	}
	return nil
}

// countHeld computes job's summary from the records it holds, changing
// nothing.
func (s *Store) countHeld(job string) (jobSummary, error) {
	var js jobSummary
	err := s.Each(ledger.Filter{Job: job}, func(r ledger.Record) error {
		if r.Status.Terminal() {
			js.count(r)
		}
		return nil
	})
	return js, err
}

// rebuildSummary computes job's summary from the records it holds and
// drops the active markers of its terminal ones, which it counted. Called
// with the lock held.
func (s *Store) rebuildSummary(job string) (jobSummary, error) {
	var js jobSummary
	err := s.Each(ledger.Filter{Job: job}, func(r ledger.Record) error {
		if r.Status.Terminal() {
			js.count(r)
		}
		return nil
	})
	if err != nil {
		return js, err
	}
	err = s.scanActive(func(id, j string) error {
		if j == job {
			if r, err := s.readRecord(id); err == nil && r.Status.Terminal() {
				s.dropActive(id, j)
			}
		}
		return nil
	})
	return js, err
}

// migrateSummaries writes the summary of every job of a store made before
// summaries existed, then marks the store as having them. Called by Open.
// A store that cannot be written (a read-only mount, a snapshot), or that
// root reads as its owner, stays as it is, and its summaries are computed
// from its records when read.
func (s *Store) migrateSummaries() error {
	var st unix.Stat_t
	if err := unix.Fstatat(s.root.FD, summariesMark, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		return nil
	}
	if os.Getuid() != os.Geteuid() || s.foreign {
		// Root reading another user's store as that user (ReadAsOwner),
		// or a reader in the owner's group (checkReader), writes nothing.
		s.unmigrated = true
		return nil
	}
	if err := s.migrate(); err != nil {
		if errors.Is(err, unix.EROFS) {
			s.unmigrated = true
			return nil
		}
		return err
	}
	return nil
}

func (s *Store) migrate() error {
	var st unix.Stat_t
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	if err := unix.Fstatat(s.root.FD, summariesMark, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		return nil
	}
	names, err := readNames(s.jobs)
	if err != nil {
		return err
	}
	for _, job := range names {
		if ledger.ValidJob(job) != nil {
			continue
		}
		js, err := s.rebuildSummary(job)
		if err != nil {
			return fmt.Errorf("migrating %s to summaries: %w", s.dir, err)
		}
		if len(js.runs) == 0 {
			continue
		}
		js.trimCounted(maxCounted)
		jd, err := openSubdir(s.jobs, job)
		if err != nil {
			return err
		}
		err = s.rep.Replace(jd, summaryName, js.Encode())
		unix.Close(jd.FD)
		if err != nil {
			return fmt.Errorf("migrating %s to summaries: %w", s.dir, err)
		}
		reached("migrate-job")
	}
	if err := createEmpty(s.root, summariesMark); err != nil {
		return err
	}
	return s.root.Sync()
}
