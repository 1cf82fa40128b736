package ledger

import (
	"time"

	"github.com/tether-sh/tether/lib/proc"
)

// ClaimOptions are the optional parts of a claim.
type ClaimOptions struct {
	// Owner is the claiming process (required), e.g. from LocalOwner.
	Owner Owner
	// Source is free text naming who dispatched the claim (cron, a host...).
	Source string
	// Instant, if not zero, is the scheduled instant: the claim is refused
	// while JOB has an execution for it that is claimed, running, completed
	// or unknown (failed and abandoned may retry). A claimed or running
	// holder whose owner is dead is recovered first, like Exclusive does,
	// so a claimer that crashed before starting does not block a retry.
	// Any time zone; it is stored in UTC.
	Instant time.Time
	// Once, with Instant, makes the slot's first execution that ran its
	// only one: the claim is also refused while JOB has a failed
	// execution for Instant that started (a failed slot is not run again
	// by a later tick: retries are the run's own, below). Abandoned
	// executions, and failed ones that never started, still leave the
	// slot free. The one exception is a retry of the same run: a claim
	// with Attempt k > 1 is not refused by a failed execution of the slot
	// whose Attempt is 1..k-1 (the earlier attempts of the run that
	// retries it). Honoured under the same lock (transaction) as Instant,
	// so that across processes and hosts on a shared store a slot runs
	// at most once. Once without Instant is ErrBadInput.
	Once bool
	// Schedule, Attempt and Attempts are written into the claimed record
	// as they are (Record.Schedule, Attempt, Attempts): the run's
	// schedule in lib/schedule's canonical text, its attempt number
	// (1-based) and how many attempts it allows; zero values for none.
	// Bounded as Record.Validate says (ErrBadInput beyond).
	Schedule string
	Attempt  int
	Attempts int
	// Exclusive refuses the claim while JOB has a claimed or running
	// execution whose owner is alive (or cannot be judged); dead owners of
	// JOB are recovered first.
	Exclusive bool
	// Every, if not zero, refuses the claim (an error for which
	// errors.Is(err, ErrNotDue) and errors.Is(err, ErrRefused) both hold)
	// while JOB's last completed execution started less than Every minus
	// EverySlack before now (its StartedAt: a period counted from the
	// last finish would drift by the run's length and a cron period per
	// cycle), or while JOB has one that is live (claimed, claimed+fenced,
	// running; dead owners recovered first, as Exclusive does). It is
	// evaluated under the same lock (transaction) as the claim, so that
	// across processes, and hosts on a shared store, a period gets at most
	// one run. Negative is ErrBadInput.
	Every time.Duration
	// Grace is the recovery grace for fenced claims (0: DefaultGrace).
	Grace time.Duration
	// Child, if set, is the payload of ledger run, forked and held before
	// its first instruction: the execution is claimed and started in one
	// update, with the child recorded (claimed_at = started_at).
	Child proc.ID
	// ID, if set, is the id to give the execution instead of a fresh one:
	// ledger run puts it in the payload's environment before the fork. It
	// must come from NewID, whose nanosecond time, random bits and job
	// hint make a repeat practically impossible. The id of a live execution,
	// or of one of job's, is refused (ErrBadInput); a store may leave the
	// finished executions of other jobs unsearched where that search
	// would grow with the jobs stored (the file store does). Ids sort like
	// claim times only to within the time between NewID and the claim.
	ID string
	// Stop, if set, gives up the claim once closed, if it has not begun
	// to commit: while it waits for the store's lock (the file store) or
	// before its transaction commits (PostgreSQL), the claim returns
	// ErrClaimStopped having changed nothing. A claim past that point
	// goes through; the store's own work from there is a few
	// milliseconds. ledger run closes it when a stop signal arrives while
	// its payload is held, and then waits for the claim's answer.
	Stop <-chan struct{}
}

// EverySlack is how much earlier than Every after the last completed
// run's start a claim with Every is due: a tenth of the period, at most
// 30 seconds, less than any cron line's period (a minute), so that a tick
// a little early (a cron daemon's start-up, a host's load) is due and the
// tick before it is not.
func EverySlack(every time.Duration) time.Duration { return min(every/10, 30*time.Second) }

// EveryFrom is the time Every counts from in r, a completed execution:
// its start (its claim, for one recorded without).
func EveryFrom(r Record) time.Time {
	if r.StartedAt.IsZero() {
		return r.ClaimedAt
	}
	return r.StartedAt
}

// Stopped is ErrClaimStopped once o.Stop is closed, else nil: what a
// store asks at each point up to which its claim may still be given up.
func (o ClaimOptions) Stopped() error {
	select {
	case <-o.Stop:
		return ErrClaimStopped
	default:
		return nil
	}
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

// PruneOptions select the terminal records Prune drops. The zero value
// drops every terminal record.
type PruneOptions struct {
	// Job, if set, limits the prune to that job's records.
	Job string
	// Keep keeps the Keep newest terminal records of each job.
	Keep int
	// OlderThan, if not zero, drops only records finished more than
	// OlderThan ago.
	OlderThan time.Duration
	// DryRun selects, counts and passes on the records as Prune would,
	// and deletes nothing (not even the leftovers of interrupted writes).
	DryRun bool
}

// Filter selects executions for Each and List; empty fields match
// everything.
type Filter struct {
	Job    string
	Status Status
}

// List returns the executions of st matching f, oldest first (Ledger.Each,
// collected), with Each's error: what could be read is returned even then.
func List(st Ledger, f Filter) ([]Record, error) {
	var out []Record
	err := st.Each(f, func(r Record) error {
		out = append(out, r)
		return nil
	})
	return out, err
}

// Pruned prunes st as o says (Ledger.Prune) and returns the records it
// deleted (with o.DryRun, would delete), in Prune's order.
func Pruned(st Ledger, o PruneOptions) ([]Record, error) {
	var out []Record
	_, err := st.Prune(o, func(r Record) error {
		out = append(out, r)
		return nil
	})
	return out, err
}
