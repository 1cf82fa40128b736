package filestore

import (
	"errors"

	"golang.org/x/sys/unix"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
)

// Recover judges every claimed or running execution: one whose owner is
// gone (by identity, judged on its boot and in its PID namespace; or died
// with an earlier boot of this host) becomes abandoned if it never
// started, unknown if it did. A fenced claim is left alone until grace has
// passed since its fence (callers wanting the default pass ledger.DefaultGrace);
// an execution whose recorded payload child is alive, or whose owner
// cannot be judged (another host, another PID namespace, an unreadable
// identity), is left alone. It returns
// the executions it changed. Records that cannot be read are skipped and
// reported in the error, after the others were judged. Where /proc is not
// this process's PID namespace's it judges nothing and returns an error
// wrapping proc.ErrForeignProc.
func (s *Store) Recover(grace time.Duration) ([]ledger.Record, error) {
	if grace < 0 {
		return nil, ledger.BadInputf("grace %v is negative", grace)
	}
	if err := ledger.CheckJudge(); err != nil {
		return nil, err
	}
	unlock, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	var out []ledger.Record
	var errs []error
	jobs, err := s.jobNames()
	if err != nil {
		return nil, err
	}
	for _, j := range jobs {
		if err := s.relinkLive(j); err != nil {
			errs = append(errs, err)
		}
	}
	err = s.scanActive(func(id, job string) error {
		r, changed, err := s.recoverID(id, grace)
		switch {
		case errors.Is(err, ledger.ErrNotFound):
		case err != nil:
			errs = append(errs, err)
		case changed:
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// RecoverOne judges execution id alone, as Recover judges every execution
// but with no fence grace: its caller knows the adopter is gone. It returns
// the record, changed or not; where /proc is not this PID namespace's, an
// error wrapping proc.ErrForeignProc.
func (s *Store) RecoverOne(id string) (ledger.Record, error) {
	if err := ledger.ValidID(id); err != nil {
		return ledger.Record{}, err
	}
	if err := ledger.CheckJudge(); err != nil {
		return ledger.Record{}, err
	}
	unlock, err := s.lock()
	if err != nil {
		return ledger.Record{}, err
	}
	defer unlock()
	r, _, err := s.recoverID(id, 0)
	if err != nil && !errors.Is(err, ledger.ErrRefused) {
		return ledger.Record{}, err
	}
	return r, nil
}

// recoverID judges execution id with the lock held: if its owner is
// dead it becomes abandoned or unknown (changed). A terminal one whose
// link is still in active/ has it moved; a link that names no record (a
// claim that died before its frame) is removed, and ErrNotFound returned.
func (s *Store) recoverID(id string, grace time.Duration) (r ledger.Record, changed bool, err error) {
	r, _, changed, err = s.judge(id, grace)
	return r, changed, err
}

// judge is recoverID that also says why a live execution was left alone
// ("its owner 12@34 on h is alive").
func (s *Store) judge(id string, grace time.Duration) (ledger.Record, string, bool, error) {
	loc, err := s.locate(id, true)
	if errors.Is(err, ledger.ErrNotFound) {
		unix.Unlinkat(s.active.FD, id, 0)
	}
	if err != nil {
		return ledger.Record{}, "", false, err
	}
	defer loc.close()
	r := loc.rec
	if r.Status.Terminal() {
		if loc.active {
			s.retire(loc)
		}
		return r, "", false, nil
	}
	next, why := ledger.JudgeRecord(r, grace, s.clock(), nil)
	if next.Status == r.Status {
		return r, why, false, nil
	}
	if err := s.writeVersion(loc, next); err != nil {
		return ledger.Record{}, "", false, err
	}
	s.maybeSettle(loc)
	return next, "", true, nil
}
