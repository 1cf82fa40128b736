package ledger

import (
	"time"

	"github.com/tether-sh/tether/lib/proc"
)

// Transition is one operation of the state machine on one record, the
// same for every store: Apply checks the record's state and edits it as
// the operation does, or refuses (ErrRefused, naming the state) leaving it
// as it was. A store runs Apply as a compare-and-swap; one that expresses
// the swap otherwise (a conditional UPDATE) applies it to the record it
// finds after a refusal to word the refusal as every store does. Op names
// the operation in messages: "cannot OP ID: why".
type Transition struct {
	Op    string
	Apply func(r *Record, now time.Time) error
}

// FenceTransition is claimed → claimed+fenced.
func FenceTransition() Transition {
	return Transition{"fence", func(r *Record, now time.Time) error {
		switch {
		case r.Status == Claimed && r.Fenced:
			return refusedf("execution is already claimed+fenced")
		case r.Status != Claimed:
			return refusedf("execution is %s, not claimed", r.State())
		}
		r.Fenced, r.FencedAt = true, now
		return nil
	}}
}

// AdoptTransition is claimed+fenced → running, owned by owner.
func AdoptTransition(owner Owner) (Transition, error) {
	if owner.PID < 1 {
		return Transition{}, badInputf("adopt needs an owner")
	}
	return Transition{"adopt", func(r *Record, now time.Time) error {
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
	}}, nil
}

// StartTransition is claimed (not fenced) → running; owner nil keeps the
// claimer.
func StartTransition(owner *Owner) (Transition, error) {
	if owner != nil && owner.PID < 1 {
		return Transition{}, badInputf("start needs a valid owner")
	}
	return Transition{"start", func(r *Record, now time.Time) error {
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
	}}, nil
}

// SetChildTransition records the payload of a running execution.
func SetChildTransition(child proc.ID) (Transition, error) {
	if child.PID < 1 || child.PID > proc.MaxPID {
		return Transition{}, badInputf("child pid %d", child.PID)
	}
	return Transition{"record the child of", func(r *Record, now time.Time) error {
		if r.Status != Running {
			return refusedf("execution is %s, not running", r.State())
		}
		r.Child = child
		return nil
	}}, nil
}

// FinishTransition is running → completed | failed, or claimed (not
// fenced) → failed.
func FinishTransition(status Status, exitCode *int, errMsg string) (Transition, error) {
	if status != Completed && status != Failed {
		return Transition{}, badInputf("finish status must be completed or failed, not %q", status)
	}
	if exitCode != nil && (*exitCode < 0 || *exitCode > 255) {
		return Transition{}, badInputf("exit code %d is not 0..255", *exitCode)
	}
	if len(errMsg) > maxErrorLen {
		return Transition{}, badInputf("error message longer than %d bytes", maxErrorLen)
	}
	if exitCode != nil {
		c := *exitCode
		exitCode = &c
	}
	return Transition{"finish", func(r *Record, now time.Time) error {
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
	}}, nil
}

// AbortTransition is claimed (fenced or not) → failed, with why.
func AbortTransition(why string) Transition {
	why = ErrorText(why)
	return Transition{"abort", func(r *Record, now time.Time) error {
		if r.Status != Claimed {
			return refusedf("execution is already %s", r.State())
		}
		r.Status, r.FinishedAt, r.Error = Failed, now, why
		return nil
	}}
}

// BeatTransition records a beat (beat_at = now, the note if o.Note is
// set) of a claimed or running execution; refused once it is terminal.
// o.IfLatest is the store's to check, against its job's newest execution.
func BeatTransition(o BeatOptions) (Transition, error) {
	if o.Note != nil && len(*o.Note) > maxNoteLen {
		return Transition{}, badInputf("note longer than %d bytes", maxNoteLen)
	}
	return Transition{"beat", func(r *Record, now time.Time) error {
		if r.Status.Terminal() {
			return refusedf("execution is already %s", r.State())
		}
		r.BeatAt = now
		if o.Note != nil {
			r.Note = *o.Note
		}
		return nil
	}}, nil
}

// NewerRefusal is the refusal of a beat with IfLatest: execution newest of
// job is newer.
func NewerRefusal(newest, job string) error {
	return refusedf("execution %s of %s is newer", newest, job)
}

// CheckClaim checks a claim's arguments as every store does, and returns
// o normalised: its instant in UTC, its grace DefaultGrace if unset.
func CheckClaim(job string, o ClaimOptions) (ClaimOptions, error) {
	if err := ValidJob(job); err != nil {
		return o, err
	}
	if o.Owner.PID < 1 || o.Owner.PID > proc.MaxPID {
		return o, badInputf("claim needs an owner")
	}
	if len(o.Source) > maxSourceLen {
		return o, badInputf("source longer than %d bytes", maxSourceLen)
	}
	if !o.Instant.IsZero() {
		o.Instant = o.Instant.UTC()
		if err := checkInstantRange(o.Instant); err != nil {
			return o, badInputf("invalid instant: %v", err)
		}
	}
	if o.Every < 0 {
		return o, badInputf("negative period %v", o.Every)
	}
	if o.Once && o.Instant.IsZero() {
		return o, badInputf("a claim once per slot needs an instant")
	}
	if len(o.Schedule) > MaxScheduleLen {
		return o, badInputf("schedule longer than %d bytes", MaxScheduleLen)
	}
	if o.Attempt < 0 || o.Attempt > MaxAttempts || o.Attempts < 0 || o.Attempts > MaxAttempts {
		return o, badInputf("attempt %d of %d: want 0..%d", o.Attempt, o.Attempts, MaxAttempts)
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	if o.Child.PID < 0 || o.Child.PID > proc.MaxPID {
		return o, badInputf("child pid %d", o.Child.PID)
	}
	return o, nil
}

// BlocksInstant reports whether an execution in status st keeps its
// (job, instant) from being claimed again: claimed, running, completed and
// unknown do; failed and abandoned may retry.
func BlocksInstant(st Status) bool { return blocksInstant(st) }

// BlocksSlot reports whether r, an execution of the job for o.Instant,
// keeps the claim o from being made: BlocksInstant's statuses always;
// with o.Once, also a failed execution that started, unless it is an
// earlier attempt (1..o.Attempt-1) of the run that retries the slot.
func BlocksSlot(r Record, o ClaimOptions) bool {
	if blocksInstant(r.Status) {
		return true
	}
	if !o.Once || r.Status != Failed || r.StartedAt.IsZero() {
		return false
	}
	return !(o.Attempt > 1 && r.Attempt >= 1 && r.Attempt < o.Attempt)
}

// Refusedf returns an ErrRefused whose message is the format's alone, as
// the store's own refusals read ("execution X is running and ...").
func Refusedf(format string, args ...any) error { return refusedf(format, args...) }
