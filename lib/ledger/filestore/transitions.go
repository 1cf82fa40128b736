package filestore

import (
	"bytes"
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

// writeRecord durably replaces exec/ID with r.
func (s *Store) writeRecord(r ledger.Record) error {
	if err := r.Validate(); err != nil {
		return fmt.Errorf("internal error: refusing to write an illegal record: %w", err)
	}
	if err := s.rep.Replace(s.exec, r.ID, r.Encode()); err != nil {
		return fmt.Errorf("writing record %s: %w", r.ID, err)
	}
	return nil
}

// update runs one compare-and-swap transition on record id: fn checks the
// current state and edits r, or returns a refusal.
//
// The new version is computed optimistically before the lock is taken
// (read, decode, transform, encode). Under the lock the record is read
// again; if it is byte-for-byte what the computation was based on, the new
// version is written (through the spare, which also fsyncs exec/). Otherwise (a
// concurrent writer, a refusal) the transition is redone under the lock.
func (s *Store) update(op, id string, fn func(r *ledger.Record, now time.Time) error) (ledger.Record, error) {
	if err := ledger.ValidID(id); err != nil {
		return ledger.Record{}, err
	}
	before, next, data, ok := s.prepare(id, fn)
	unlock, err := s.lock()
	if err != nil {
		return ledger.Record{}, err
	}
	defer unlock()
	if ok {
		cur, err := readSmall(s.exec, id, ledger.MaxRecordSize)
		if err == nil && bytes.Equal(cur, before) {
			if err := s.rep.Replace(s.exec, id, data); err != nil {
				return ledger.Record{}, fmt.Errorf("writing record %s: %w", id, err)
			}
			if next.Status.Terminal() {
				s.maybeSettle(next.Job)
			}
			return next, nil
		}
	}
	r, err := s.readRecord(id)
	if err != nil {
		return ledger.Record{}, fmt.Errorf("cannot %s %s: %w", op, id, err)
	}
	if err := fn(&r, s.clock()); err != nil {
		return r, fmt.Errorf("cannot %s %s: %w", op, id, err)
	}
	if err := s.writeRecord(r); err != nil {
		return ledger.Record{}, err
	}
	if r.Status.Terminal() {
		s.maybeSettle(r.Job)
	}
	return r, nil
}

// prepare reads record id without the lock and computes its transformed
// version. ok is false if anything fails or fn refuses; the caller then
// does the work under the lock.
func (s *Store) prepare(id string, fn func(r *ledger.Record, now time.Time) error) (before []byte, next ledger.Record, data []byte, ok bool) {
	before, err := readSmall(s.exec, id, ledger.MaxRecordSize)
	if err != nil {
		return nil, next, nil, false
	}
	next, err = ledger.Decode(before, id)
	if err != nil || fn(&next, s.clock()) != nil || next.Validate() != nil {
		return nil, next, nil, false
	}
	return before, next, next.Encode(), true
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
	r, err := s.readRecord(id)
	if err != nil {
		return ledger.Record{}, fmt.Errorf("cannot beat %s: %w", id, err)
	}
	if r.Status.Terminal() {
		return r, fmt.Errorf("cannot beat %s: %w", id, t.Apply(&r, s.clock()))
	}
	if o.IfLatest {
		newest, err := s.newestOf(r.Job)
		if err != nil {
			return ledger.Record{}, fmt.Errorf("cannot beat %s: %w", id, err)
		}
		if newest > id {
			return r, fmt.Errorf("cannot beat %s: %w", id, ledger.NewerRefusal(newest, r.Job))
		}
	}
	t.Apply(&r, s.clock())
	if err := s.writeRecord(r); err != nil {
		return ledger.Record{}, err
	}
	return r, nil
}
