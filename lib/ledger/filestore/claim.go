package filestore

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/internal/durable"
	"github.com/tether-sh/tether/lib/ledger"
)

// freshID checks that a chosen id is well-formed and not in the store yet.
func (s *Store) freshID(id string) error {
	if err := ledger.ValidID(id); err != nil {
		return err
	}
	var st unix.Stat_t
	switch err := unix.Fstatat(s.exec.FD, id, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil:
		return ledger.BadInputf("execution %s exists already", id)
	case !errors.Is(err, unix.ENOENT):
		return &os.PathError{Op: "stat", Path: s.exec.Show(id), Err: err}
	}
	return nil
}

// Claim records a new execution of job owned by o.Owner and returns it.
func (s *Store) Claim(job string, o ledger.ClaimOptions) (ledger.Record, error) {
	o, err := ledger.CheckClaim(job, o)
	if err != nil {
		return ledger.Record{}, err
	}
	unlock, err := s.lock()
	if err != nil {
		return ledger.Record{}, err
	}
	defer unlock()

	newJob := false
	if err := unix.Mkdirat(s.jobs.FD, job, 0o700); err == nil {
		newJob = true
	} else if !errors.Is(err, unix.EEXIST) {
		return ledger.Record{}, fmt.Errorf("cannot claim %s: creating %s: %w", job, s.jobs.Show(job), err)
	}
	jobDir, err := openSubdir(s.jobs, job)
	if err != nil {
		return ledger.Record{}, fmt.Errorf("cannot claim %s: %w", job, err)
	}
	defer unix.Close(jobDir.FD)
	if newJob {
		unix.Fchmod(jobDir.FD, 0o700) // the umask may have cleared bits
		durable.Inherit(s.jobs, jobDir.FD, true)
	}

	if err := s.admitClaim(job, jobDir, o); err != nil {
		return ledger.Record{}, err
	}

	now := s.clock()
	id := o.ID
	if id == "" {
		id = ledger.NewID(now)
	} else if err := s.freshID(id); err != nil {
		return ledger.Record{}, fmt.Errorf("cannot claim %s: %w", job, err)
	}
	r := ledger.Record{
		ID: id, Job: job, Source: o.Source, Instant: o.Instant,
		Status: ledger.Claimed, Owner: o.Owner, ClaimedAt: now,
	}
	if o.Child.PID != 0 {
		r.Status, r.StartedAt, r.Child = ledger.Running, now, o.Child
	}
	if err := s.writeClaim(jobDir, newJob, r, o); err != nil {
		return ledger.Record{}, fmt.Errorf("cannot claim %s: %w", job, err)
	}
	return r, nil
}

// admitClaim applies o's admission checks (instant, exclusive, due) to a
// claim of job, whose directory is jobDir. Called with the lock held.
func (s *Store) admitClaim(job string, jobDir dirh, o ledger.ClaimOptions) error {
	if !o.Instant.IsZero() {
		if err := s.checkInstant(job, jobDir, o.Instant, o.Grace); err != nil {
			return fmt.Errorf("cannot claim %s for %s: %w", job, ledger.FormatTime(o.Instant), err)
		}
	}
	if o.Exclusive {
		if err := s.checkExclusive(job, o.Grace); err != nil {
			return fmt.Errorf("cannot claim %s exclusively: %w", job, err)
		}
	}

	if o.Every > 0 {
		if err := s.checkDue(job, o.Every, o.Grace); err != nil {
			return fmt.Errorf("cannot claim %s every %v: %w", job, o.Every, err)
		}
	}
	return nil
}

// writeClaim writes r, the claim's first version, and its index entries in
// jobDir (newJob: the directory was just created), under the store's lock.
func (s *Store) writeClaim(jobDir dirh, newJob bool, r ledger.Record, o ledger.ClaimOptions) error {
	// The record's first version is written and made durable under a
	// temporary name; its index entries are made durable next (the two
	// markers are one empty inode: no data block), and only then is the
	// record renamed into place: see "Crash safety".
	if err := r.Validate(); err != nil {
		return fmt.Errorf("internal error: refusing to write an illegal record: %w", err)
	}
	rec, fd, err := durable.StageOpen(s.exec, r.ID, r.Encode())
	if err != nil {
		return err
	}
	abort := func(err error) error {
		unix.Close(fd)
		rec.Abort()
		return err
	}
	if err := createEmpty(jobDir, r.ID); err != nil {
		return abort(err)
	}
	if err := linkMarker(durable.Pending{Dir: jobDir, Temp: r.ID}, s.active, activeName(r.ID, r.Job)); err != nil {
		return abort(err)
	}
	head, _ := s.latestIn(jobDir)
	reached("claim-linked")
	// The record's data, the job's index and the active marker are made
	// durable at once: they are independent of each other (only the rename
	// below must follow all three), and on a journalling file system the
	// concurrent flushes share one commit.
	var wg sync.WaitGroup
	var jobErr, activeErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		if !o.Instant.IsZero() {
			if jobErr = durable.Write(jobDir, instantKey(o.Instant), []byte(r.ID+"\n"), true); jobErr != nil {
				return
			}
		}
		// Through the job's spare, like a record: a new _latest inode per
		// claim, and the old one's deletion, would make the file system
		// search ever longer past recently deleted inodes (ext4 without a
		// journal). It fsyncs jobDir, the markers' and the key's too.
		jobErr = s.rep.Replace(jobDir, latestName, []byte(r.ID+" "+head+"\n"))
	}()
	go func() {
		defer wg.Done()
		if activeErr = s.active.Sync(); activeErr == nil && newJob {
			activeErr = s.jobs.Sync()
		}
	}()
	dataErr := durable.Fdatasync(fd)
	if dataErr != nil {
		dataErr = &os.PathError{Op: "fdatasync", Path: s.exec.Show(rec.Temp), Err: dataErr}
	}
	wg.Wait()
	if err := errors.Join(dataErr, jobErr, activeErr); err != nil {
		return abort(err)
	}
	if err := unix.Close(fd); err != nil {
		rec.Abort()
		return &os.PathError{Op: "close", Path: s.exec.Show(rec.Temp), Err: err}
	}
	reached("claim-synced")
	commit := rec.Commit
	if o.ID != "" {
		commit = rec.CommitNew
	}
	if err := commit(); err != nil {
		if errors.Is(err, durable.ErrExists) {
			err = ledger.BadInputf("execution %s exists already", r.ID)
		}
		return err
	}
	if err := s.exec.Sync(); err != nil {
		return err
	}
	return nil
}

// checkExclusive refuses while job has a claimed or running execution whose
// owner is alive or cannot be judged; dead owners are recovered first.
// Called with the lock held.
func (s *Store) checkExclusive(job string, grace time.Duration) error {
	var done []ledger.Record
	err := s.scanActive(func(id, j string) error {
		if j != job {
			return nil
		}
		r, err := s.readRecord(id)
		if errors.Is(err, ledger.ErrNotFound) {
			s.dropActive(id, j)
			return nil
		}
		if err != nil {
			return err
		}
		r, why, err := s.recoverOne(r, grace)
		if err != nil {
			return err
		}
		if !r.Status.Terminal() {
			return ledger.Refusedf("execution %s is %s and %s", r.ID, r.State(), why)
		}
		if r.Job == job {
			done = append(done, r)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return s.settle(job, done)
}

// checkDue refuses (ledger.ErrNotDue) while job has a live execution (dead
// owners recovered first, as checkExclusive does) or one that completed
// within every before now. Called with the lock held.
func (s *Store) checkDue(job string, every, grace time.Duration) error {
	if err := s.checkExclusive(job, grace); err != nil {
		if errors.Is(err, ledger.ErrRefused) {
			return ledger.NotDuef("%v", err)
		}
		return err
	}
	// checkExclusive settled every terminal record still marked active.
	sum, err := s.summary(job, nil)
	if err != nil {
		return err
	}
	if r := sum.LastSuccess; r.ID != "" {
		if since := s.clock().Sub(r.FinishedAt); since < every {
			return ledger.NotDuef("execution %s completed %v ago (at %s), less than %v", r.ID, since.Round(time.Millisecond), ledger.FormatTime(r.FinishedAt), every)
		}
	}
	return nil
}
