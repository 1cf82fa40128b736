package filestore

import (
	"fmt"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/proc"
)

// The state machine's transitions of one existing record, each a
// compare-and-swap under the store's lock (see update).

// clock returns the time now by the store's clock (s.now, which tests
// replace), in UTC: the time every transition records.
func (s *Store) clock() time.Time { return s.now().UTC() }

// update runs one compare-and-swap transition on record id under the
// store's lock: fn checks the current state and edits r, or returns a
// refusal; the new version is appended to the job's log (writeVersion).
func (s *Store) update(op, id string, fn func(r *ledger.Record, now time.Time) error) (ledger.Record, error) {
	if err := ledger.ValidID(id); err != nil {
		return ledger.Record{}, err
	}
	unlock, err := s.lock()
	if err != nil {
		return ledger.Record{}, err
	}
	defer unlock()
	loc, err := s.locate(id, true)
	if err != nil {
		return ledger.Record{}, fmt.Errorf("cannot %s %s: %w", op, id, err)
	}
	defer loc.close()
	r := loc.rec
	if err := fn(&r, s.clock()); err != nil {
		return r, fmt.Errorf("cannot %s %s: %w", op, id, err)
	}
	if err := s.writeVersion(loc, r); err != nil {
		return ledger.Record{}, err
	}
	s.maybeSettle(loc)
	return r, nil
}

// Fence marks a claimed execution as handed off (claimed → claimed+fenced),
// so that only Adopt may start it. Refused from any other state.
func (s *Store) Fence(id string) (ledger.Record, error) {
	t := ledger.FenceTransition()
	return s.update(t.Op, id, t.Apply)
}

// Adopt hands a fenced claim to owner (claimed+fenced → running). Of any
// number of concurrent adopters exactly one succeeds; the others, and any
// adopter of a claim that is not fenced, are refused.
func (s *Store) Adopt(id string, owner ledger.Owner) (ledger.Record, error) {
	t, err := ledger.AdoptTransition(owner)
	if err != nil {
		return ledger.Record{}, err
	}
	return s.update(t.Op, id, t.Apply)
}

// Start starts a claim in-process (claimed → running). The claimer stays
// the owner unless owner is not nil. A fenced claim is refused: it was
// handed off and only its adopter may start it.
func (s *Store) Start(id string, owner *ledger.Owner) (ledger.Record, error) {
	t, err := ledger.StartTransition(owner)
	if err != nil {
		return ledger.Record{}, err
	}
	return s.update(t.Op, id, t.Apply)
}

// SetChild records the payload process of a running execution; recovery
// does not judge an execution while that process is alive.
func (s *Store) SetChild(id string, child proc.ID) (ledger.Record, error) {
	t, err := ledger.SetChildTransition(child)
	if err != nil {
		return ledger.Record{}, err
	}
	return s.update(t.Op, id, t.Apply)
}

// Finish records a result: running → completed or failed, or claimed (not
// fenced) → failed, for a dispatch that never started. exitCode (0..255)
// and errMsg are optional.
func (s *Store) Finish(id string, status ledger.Status, exitCode *int, errMsg string) (ledger.Record, error) {
	t, err := ledger.FinishTransition(status, exitCode, errMsg)
	if err != nil {
		return ledger.Record{}, err
	}
	return s.update(t.Op, id, t.Apply)
}

// AbortHandoff records that a handoff never reached its worker: claimed
// (fenced or not) → failed, with why as the error. It is the dispatcher's
// way out when the worker could not be started, exited before
// acknowledging, or did not acknowledge in time. Being a compare-and-swap,
// it races safely with the worker's adopt: exactly one of them wins, so
// either the payload runs under its adopter or it never runs at all.
func (s *Store) AbortHandoff(id, why string) (ledger.Record, error) {
	t := ledger.AbortTransition(why)
	return s.update(t.Op, id, t.Apply)
}

// Beat records that execution id is alive now, and its progress note
// (claimed, claimed+fenced or running: the state is kept, beat_at is
// set). It is refused once the execution is terminal, and with IfLatest
// when a newer execution of its job exists, so that a watcher records a
// stall only against the attempt that is still current. Like every
// update it is one durable write under the lock; the IfLatest check is
// made under the same lock, so a claim cannot slip in between.
func (s *Store) Beat(id string, o ledger.BeatOptions) (ledger.Record, error) {
	if err := ledger.ValidID(id); err != nil {
		return ledger.Record{}, err
	}
	t, err := ledger.BeatTransition(o)
	if err != nil {
		return ledger.Record{}, err
	}
	unlock, err := s.lock()
	if err != nil {
		return ledger.Record{}, err
	}
	defer unlock()
	loc, err := s.locate(id, true)
	if err != nil {
		return ledger.Record{}, fmt.Errorf("cannot beat %s: %w", id, err)
	}
	defer loc.close()
	r := loc.rec
	if r.Status.Terminal() {
		return r, fmt.Errorf("cannot beat %s: %w", id, t.Apply(&r, s.clock()))
	}
	if o.IfLatest {
		newest, _, err := newestIn(loc.log)
		if err != nil {
			return ledger.Record{}, fmt.Errorf("cannot beat %s: %w", id, err)
		}
		if newest > id {
			return r, fmt.Errorf("cannot beat %s: %w", id, ledger.NewerRefusal(newest, r.Job))
		}
	}
	t.Apply(&r, s.clock())
	if err := s.writeVersion(loc, r); err != nil {
		return ledger.Record{}, err
	}
	s.maybeSettle(loc)
	return r, nil
}
