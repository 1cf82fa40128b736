package ledger

import (
	"bytes"
	"fmt"
	"time"

	"github.com/tether-sh/tether/lib/proc"
)

// The state machine's transitions of one existing record, each a
// compare-and-swap under the store's lock (see update).

// clock returns the time now by the store's clock (s.now, which tests
// replace), in UTC: the time every transition records.
func (s *Store) clock() time.Time { return s.now().UTC() }

// writeRecord durably replaces exec/ID with r.
func (s *Store) writeRecord(r Record) error {
	if err := r.Validate(); err != nil {
		return fmt.Errorf("internal error: refusing to write an illegal record: %w", err)
	}
	if err := s.rep.Replace(s.exec, r.ID, r.encode()); err != nil {
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
func (s *Store) update(op, id string, fn func(r *Record, now time.Time) error) (Record, error) {
	if err := ValidID(id); err != nil {
		return Record{}, err
	}
	before, next, data, ok := s.prepare(id, fn)
	unlock, err := s.lock()
	if err != nil {
		return Record{}, err
	}
	defer unlock()
	if ok {
		cur, err := readSmall(s.exec, id, maxRecordSize)
		if err == nil && bytes.Equal(cur, before) {
			if err := s.rep.Replace(s.exec, id, data); err != nil {
				return Record{}, fmt.Errorf("writing record %s: %w", id, err)
			}
			if next.Status.Terminal() {
				s.dropActive(next.ID, next.Job)
			}
			return next, nil
		}
	}
	r, err := s.readRecord(id)
	if err != nil {
		return Record{}, fmt.Errorf("cannot %s %s: %w", op, id, err)
	}
	if err := fn(&r, s.clock()); err != nil {
		return r, fmt.Errorf("cannot %s %s: %w", op, id, err)
	}
	if err := s.writeRecord(r); err != nil {
		return Record{}, err
	}
	if r.Status.Terminal() {
		s.dropActive(r.ID, r.Job)
	}
	return r, nil
}

// prepare reads record id without the lock and computes its transformed
// version. ok is false if anything fails or fn refuses; the caller then
// does the work under the lock.
func (s *Store) prepare(id string, fn func(r *Record, now time.Time) error) (before []byte, next Record, data []byte, ok bool) {
	before, err := readSmall(s.exec, id, maxRecordSize)
	if err != nil {
		return nil, next, nil, false
	}
	next, err = Decode(before, id)
	if err != nil || fn(&next, s.clock()) != nil || next.Validate() != nil {
		return nil, next, nil, false
	}
	return before, next, next.encode(), true
}

// Fence marks a claimed execution as handed off (claimed → claimed+fenced),
// so that only Adopt may start it. Refused from any other state.
func (s *Store) Fence(id string) (Record, error) {
	return s.update("fence", id, func(r *Record, now time.Time) error {
		switch {
		case r.Status == Claimed && r.Fenced:
			return refusedf("execution is already claimed+fenced")
		case r.Status != Claimed:
			return refusedf("execution is %s, not claimed", r.State())
		}
		r.Fenced, r.FencedAt = true, now
		return nil
	})
}

// Adopt hands a fenced claim to owner (claimed+fenced → running). Of any
// number of concurrent adopters exactly one succeeds; the others, and any
// adopter of a claim that is not fenced, are refused.
func (s *Store) Adopt(id string, owner Owner) (Record, error) {
	if owner.PID < 1 {
		return Record{}, badInputf("adopt needs an owner")
	}
	return s.update("adopt", id, func(r *Record, now time.Time) error {
		switch {
		case r.Status == Claimed && !r.Fenced:
			return refusedf("execution is claimed, not fenced")
		case r.Status == Running:
			return refusedf("execution is running: already adopted or started")
		case r.Status != Claimed:
			return refusedf("execution is %s", r.State())
		}
		r.Status, r.Owner, r.StartedAt = Running, owner, now
		return nil
	})
}

// Start starts a claim in-process (claimed → running). The claimer stays
// the owner unless owner is not nil. A fenced claim is refused: it was
// handed off and only its adopter may start it.
func (s *Store) Start(id string, owner *Owner) (Record, error) {
	if owner != nil && owner.PID < 1 {
		return Record{}, badInputf("start needs a valid owner")
	}
	return s.update("start", id, func(r *Record, now time.Time) error {
		switch {
		case r.Status == Claimed && r.Fenced:
			return refusedf("execution is claimed+fenced: it was handed off, only adopt may start it")
		case r.Status != Claimed:
			return refusedf("execution is %s, not claimed", r.State())
		}
		r.Status, r.StartedAt = Running, now
		if owner != nil {
			r.Owner = *owner
		}
		return nil
	})
}

// SetChild records the payload process of a running execution; recovery
// does not judge an execution while that process is alive.
func (s *Store) SetChild(id string, child proc.ID) (Record, error) {
	if child.PID < 1 || child.PID > proc.MaxPID {
		return Record{}, badInputf("child pid %d", child.PID)
	}
	return s.update("record the child of", id, func(r *Record, now time.Time) error {
		if r.Status != Running {
			return refusedf("execution is %s, not running", r.State())
		}
		r.Child = child
		return nil
	})
}

// Finish records a result: running → completed or failed, or claimed (not
// fenced) → failed, for a dispatch that never started. exitCode (0..255)
// and errMsg are optional.
func (s *Store) Finish(id string, status Status, exitCode *int, errMsg string) (Record, error) {
	if status != Completed && status != Failed {
		return Record{}, badInputf("finish status must be completed or failed, not %q", status)
	}
	if exitCode != nil && (*exitCode < 0 || *exitCode > 255) {
		return Record{}, badInputf("exit code %d is not 0..255", *exitCode)
	}
	if len(errMsg) > maxErrorLen {
		return Record{}, badInputf("error message longer than %d bytes", maxErrorLen)
	}
	if exitCode != nil {
		c := *exitCode
		exitCode = &c
	}
	return s.update("finish", id, func(r *Record, now time.Time) error {
		switch {
		case r.Status == Running:
		case r.Status == Claimed && r.Fenced:
			return refusedf("execution is claimed+fenced: its adopter finishes it, or recover abandons it")
		case r.Status == Claimed && status == Completed:
			return refusedf("execution is claimed and never started: it can only finish as failed")
		case r.Status == Claimed:
		default:
			return refusedf("execution is already %s", r.State())
		}
		r.Status, r.FinishedAt, r.ExitCode, r.Error = status, now, exitCode, errMsg
		return nil
	})
}

// AbortHandoff records that a handoff never reached its worker: claimed
// (fenced or not) → failed, with why as the error. It is the dispatcher's
// way out when the worker could not be started, exited before
// acknowledging, or did not acknowledge in time. Being a compare-and-swap,
// it races safely with the worker's adopt: exactly one of them wins, so
// either the payload runs under its adopter or it never runs at all.
func (s *Store) AbortHandoff(id, why string) (Record, error) {
	why = ErrorText(why)
	return s.update("abort", id, func(r *Record, now time.Time) error {
		if r.Status != Claimed {
			return refusedf("execution is already %s", r.State())
		}
		r.Status, r.FinishedAt, r.Error = Failed, now, why
		return nil
	})
}

// BeatOptions are the optional parts of a beat.
type BeatOptions struct {
	// Note, if not nil, replaces the execution's progress note ("" clears
	// it); nil keeps the note of the last beat.
	Note *string
	// IfLatest refuses the beat when the execution's job has a newer
	// execution: the beat is about an attempt that is no longer current.
	IfLatest bool
}

// Beat records that execution id is alive now, and its progress note
// (claimed, claimed+fenced or running: the state is kept, beat_at is
// set). It is refused once the execution is terminal, and with IfLatest
// when a newer execution of its job exists, so that a watcher records a
// stall only against the attempt that is still current. Like every
// update it is one durable write under the lock; the IfLatest check is
// made under the same lock, so a claim cannot slip in between.
func (s *Store) Beat(id string, o BeatOptions) (Record, error) {
	if err := ValidID(id); err != nil {
		return Record{}, err
	}
	if o.Note != nil && len(*o.Note) > maxNoteLen {
		return Record{}, badInputf("note longer than %d bytes", maxNoteLen)
	}
	unlock, err := s.lock()
	if err != nil {
		return Record{}, err
	}
	defer unlock()
	r, err := s.readRecord(id)
	if err != nil {
		return Record{}, fmt.Errorf("cannot beat %s: %w", id, err)
	}
	if r.Status.Terminal() {
		return r, fmt.Errorf("cannot beat %s: %w", id, refusedf("execution is already %s", r.State()))
	}
	if o.IfLatest {
		newest, err := s.newestOf(r.Job)
		if err != nil {
			return Record{}, fmt.Errorf("cannot beat %s: %w", id, err)
		}
		if newest > id {
			return r, fmt.Errorf("cannot beat %s: %w", id, refusedf("execution %s of %s is newer", newest, r.Job))
		}
	}
	r.BeatAt = s.clock()
	if o.Note != nil {
		r.Note = *o.Note
	}
	if err := s.writeRecord(r); err != nil {
		return Record{}, err
	}
	return r, nil
}
