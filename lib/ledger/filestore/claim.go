package filestore

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/internal/durable"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/filestore/joblog"
	"github.com/tether-sh/tether/lib/ledger/filestore/wire"
)

// freshID checks that id, chosen by Claim's caller with ledger.NewID, is
// well-formed and not an execution of the store yet: not live, and not
// one of job's. The finished executions of other jobs are not searched:
// that reads every job's index (O(jobs): bench/README.md), against a repeat NewID makes only in the same
// nanosecond, with the same ~20.7 random bits and for a job of the same
// hint (1 in 1,296).
func (s *Store) freshID(id, job string) error {
	if err := ledger.ValidID(id); err != nil {
		return err
	}
	in, err := s.storedIn(id, job)
	if err != nil {
		return err
	}
	if in {
		return ledger.BadInputf("execution %s exists already", id)
	}
	return nil
}

// Claim records a new execution of job owned by o.Owner and returns it.
func (s *Store) Claim(job string, o ledger.ClaimOptions) (ledger.Record, error) {
	o, err := ledger.CheckClaim(job, o)
	if err != nil {
		return ledger.Record{}, err
	}
	unlock, err := s.lockUntil(o)
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
	r, err := s.claimIn(job, jobDir, newJob, o)
	if err != nil && newJob {
		// No job is left that no claim made it into (a full disk):
		// status would show it as one that never ran.
		s.dropJob(job, jobDir)
	}
	return r, err
}

// dropJob removes job's directory jd, which the claim that made it could
// not claim in, with what that claim left in it (its log's header, an
// empty index, a slot naming no claim). Called with the lock held.
func (s *Store) dropJob(job string, jd dirh) {
	names, err := readNames(jd)
	if err != nil {
		return
	}
	// The log last: a job's files without its log are a log removed
	// (damage.go), which this is not.
	for _, n := range names {
		if n != joblog.Name {
			unix.Unlinkat(jd.FD, n, 0)
		}
	}
	unix.Unlinkat(jd.FD, joblog.Name, 0)
	unix.Unlinkat(s.jobs.FD, job, unix.AT_REMOVEDIR)
}

// claimIn is Claim once job's directory is open as jobDir (newJob: made
// by this claim). Called with the lock held.
func (s *Store) claimIn(job string, jobDir dirh, newJob bool, o ledger.ClaimOptions) (ledger.Record, error) {
	if err := s.admitClaim(job, jobDir, o); err != nil {
		return ledger.Record{}, err
	}

	now := s.clock()
	id := o.ID
	if id == "" {
		id = ledger.NewID(now, job)
	} else if err := s.freshID(id, job); err != nil {
		return ledger.Record{}, fmt.Errorf("cannot claim %s: %w", job, err)
	}
	r := ledger.Record{
		ID: id, Job: job, Source: o.Source, Instant: o.Instant,
		Status: ledger.Claimed, Owner: o.Owner, ClaimedAt: now,
		Schedule: o.Schedule, Attempt: o.Attempt, Attempts: o.Attempts,
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
		if err := s.checkInstant(job, jobDir, o); err != nil {
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

// writeClaim writes r, the claim's first version, to the job's log (in
// jobDir; newJob: the directory was just created), under the store's lock.
//
// Its link (active/ID) and its instant's slot are made first, the frame
// last: the frame is the commit. A crash before it leaves a link to
// nothing, which readers take as no record. The slot is flushed before
// the frame, and the link too unless the links are kept whole through the
// boot (linksKept): every durable claim has a durable slot, and a link
// that only a new boot can lose. See "Crash safety".
func (s *Store) writeClaim(jobDir dirh, newJob bool, r ledger.Record, o ledger.ClaimOptions) error {
	if err := r.Validate(); err != nil {
		return fmt.Errorf("internal error: refusing to write an illegal record: %w", err)
	}
	l, err := s.writableLog(jobDir, r.Job, newJob)
	if err != nil {
		return err
	}
	defer l.Close()
	err = unix.Symlinkat(hintOf(l.Gen, l.End, r.Job), s.active.FD, r.ID)
	if err == unix.EEXIST {
		return ledger.BadInputf("execution %s exists already", r.ID)
	}
	if err != nil {
		return &os.PathError{Op: "symlink", Path: s.active.Show(r.ID), Err: err}
	}
	abort := func(err error) error {
		unix.Unlinkat(s.active.FD, r.ID, 0)
		return err
	}
	var dirs []dirh
	if !s.linksKept() {
		dirs = append(dirs, s.active)
	}
	if !o.Instant.IsZero() {
		if err := setLink(jobDir, instantKey(o.Instant), r.ID); err != nil {
			return abort(err)
		}
		dirs = append(dirs, jobDir)
	}
	reached("claim-linked")
	if len(dirs) > 0 {
		if err := syncDirs(dirs...); err != nil {
			return abort(err)
		}
	}
	if _, err := l.Append(joblog.KindClaim, r.ID, 0, wire.Encode(r)); err != nil {
		return abort(err)
	}
	return nil
}

// writableLog opens job's log, in its directory jd, for appending,
// creating it (durably) where it is missing: a new job (newJob: its
// directory just made), or one whose creation was cut short.
func (s *Store) writableLog(jd dirh, job string, newJob bool) (*jobLog, error) {
	l, err := openLog(jd, job, true)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return l, err
	}
	w, err := newLogWriter(jd, job, 1, jobSummary{})
	if err != nil {
		return nil, err
	}
	if l, err = w.commit(); err != nil {
		return nil, err
	}
	// Its index, empty (a reader reads the log of a job without one).
	writeIds(jd, idsOf(l, nil), false)
	dirs := []dirh{jd}
	if newJob {
		dirs = append(dirs, s.jobs)
	}
	if err := syncDirs(dirs...); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// checkExclusive refuses while job has a claimed or running execution whose
// owner is alive or cannot be judged; dead owners are recovered first.
// Called with the lock held.
func (s *Store) checkExclusive(job string, grace time.Duration) error {
	if err := s.relinkLive(job); err != nil {
		return err
	}
	return s.scanActive(func(id, j string) error {
		if j != job {
			return nil
		}
		r, why, _, err := s.judge(id, grace)
		if errors.Is(err, ledger.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if !r.Status.Terminal() && r.Job == job {
			return ledger.Refusedf("execution %s is %s and %s", r.ID, r.State(), why)
		}
		return nil
	})
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
	sum, err := s.summary(job, nil, nil, false)
	if err != nil {
		return err
	}
	// A success that finished later than now (beyond ledger.FutureSkew)
	// was recorded by a clock since stepped back: it cannot be placed, and holding the job until
	// real time passes it would skip runs for as long as the step (the
	// ledger.Summary's last success is the last in the log, whatever its
	// time). It does not hold the period.
	if r := sum.LastSuccess; r.ID != "" {
		from := ledger.EveryFrom(r)
		if since := s.clock().Sub(from); since > -ledger.FutureSkew && since < every-ledger.EverySlack(every) {
			return ledger.NotDuef("execution %s completed, started %v ago (at %s), less than %v", r.ID, since.Round(time.Millisecond), ledger.FormatTime(from), every)
		}
	}
	return nil
}
