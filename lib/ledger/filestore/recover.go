package filestore

import (
	"errors"
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
	var out, done []ledger.Record
	var errs []error
	err = s.scanActive(func(id, job string) error {
		r, err := s.readRecord(id)
		if errors.Is(err, ledger.ErrNotFound) {
			s.dropActive(id, job)
			return nil
		}
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		before := r.Status
		r, _, err = s.recoverOne(r, grace)
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		if r.Status != before {
			out = append(out, r)
		}
		if r.Status.Terminal() && r.Job == job {
			done = append(done, r)
		}
		return nil
	})
	if err != nil {
		errs = append(errs, err)
	}
	if err := s.settleAll(done); err != nil {
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
	r, err := s.readRecord(id)
	if err != nil {
		return ledger.Record{}, err
	}
	r, _, err = s.recoverOne(r, 0)
	if err != nil && !errors.Is(err, ledger.ErrRefused) {
		return ledger.Record{}, err
	}
	if r.Status.Terminal() {
		s.maybeSettle(r.Job)
	}
	return r, nil
}

// recoverOne judges one record with the lock held. If its owner is dead it
// is rewritten as abandoned or unknown and returned; otherwise it is
// returned unchanged with a phrase saying why it was left alone
// ("its owner 12@34 on h is alive").
func (s *Store) recoverOne(r ledger.Record, grace time.Duration) (ledger.Record, string, error) {
	if r.Status.Terminal() {
		// A finished execution not settled yet: the caller settles it.
		return r, "", nil
	}
	next, why := ledger.JudgeRecord(r, grace, s.clock(), nil)
	if next.Status == r.Status {
		return r, why, nil
	}
	r = next
	if err := s.writeRecord(r); err != nil {
		return ledger.Record{}, "", err
	}
	return r, "", nil
}
