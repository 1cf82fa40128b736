// Package execution runs the payload of one ledger execution and records
// what happened: the child's identity as soon as it runs, then its result.
// It is the part shared by adopt and ledger run, which differ only in how
// the execution came to be running. Spawn and WaitSpawned (spawn.go) are
// ledger spawn's side of a handoff to a detached adopt worker.
//
//	out := execution.Run(tool.Warnf, st, rec.ID, execution.Options{Argv: argv, KeepOutput: 64 << 10})
//	return out.Code // the payload's status, 128+N, 124, 126/127, or 125
package execution

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tether-sh/tether/lib/spec"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/proc"
	"github.com/tether-sh/tether/lib/runner"
)

// EnvVar names the execution id in the payload's environment.
const EnvVar = "TETHER_EXECUTION"

// Options says how to run the payload.
type Options struct {
	Argv     []string
	Grace    time.Duration // bounded-stop grace (deadline, leftovers)
	Deadline time.Duration // 0: none
	// PIDNamespace runs the payload as init of a new PID namespace, so that
	// nothing it starts outlives it, even a SIGKILL of the tool (root only).
	PIDNamespace bool
	// Fence, when done, stops the payload (its process group: TERM, Grace,
	// KILL) and ends the execution failed: the runner could not renew its
	// lease, and must be rid of the payload before the lease runs out and
	// another host may judge it gone. nil: never.
	Fence context.Context
	// Signals is a channel registered by CatchSignals before the execution
	// was claimed or adopted; nil lets the runner register its own.
	Signals chan os.Signal
	// Claim, for ledger run, creates the execution with the given id (a
	// fresh ledger.NewID, already in the payload's environment): it claims
	// and starts it in one update with the payload recorded, while the
	// payload is held before its first instruction
	// (ledger.ClaimOptions.Child and ID). It is called with a zero child
	// when the payload could not even be started (not found), to record
	// that as a failed execution. Without Claim, the execution is running
	// already (adopted) and only the payload is recorded. A refusal
	// (wrapping ledger.ErrRefused) is returned in Outcome.Refused, unsaid.
	Claim func(id string, child proc.ID) (ledger.Record, error)

	// KeepOutput, when positive, keeps the last KeepOutput bytes of the
	// payload's stdout and stderr with the execution as they are written
	// (ledger.Ledger.OpenOutput), one combined stream; both still reach the
	// caller (output.go).
	KeepOutput int64
	// Quiet (chronic): the payload's output and the runner's notices
	// (leftovers stopped) are held, and printed only if the payload fails
	// (a non-zero result), each stream to its own; faults of the tool are
	// said at once all the same. Up to the larger of KeepOutput and
	// DefaultKeepOutput bytes of each stream are held.
	Quiet bool
	// Job and Keep: once the result is recorded, the terminal executions of
	// Job beyond its newest Keep are pruned (Keep > 0).
	Job  string
	Keep int
}

// Outcome is how Run ended.
type Outcome struct {
	// Code is the exit code the tool should exit with.
	Code int
	// ID is the execution's id ("" if none was claimed).
	ID string
	// Refused is Claim's refusal: nothing was recorded nor run, and
	// nothing said; Code is 125.
	Refused error
}

// CatchSignals registers the signals a runner forwards, so that one that
// arrives between the claim and the payload's start neither kills the tool
// (leaving a started execution that never ran) nor is lost: the runner
// forwards it once the payload runs. Call stop when done.
func CatchSignals() (sigs chan os.Signal, stop func()) {
	c := runner.Catch(runner.Forwardable(runner.DefaultForward)...)
	return c.C(), c.Stop
}

// Run runs argv for execution id (none yet with o.Claim) and finishes its
// record: completed iff the payload exited 0, else failed with its exit
// code (or 128+N for signal N, 124 for the deadline, 126/127 when it could
// not be executed). It returns the exit code the tool should exit with.
//
// The payload runs only once its PID@START is durable in the record: if
// that cannot be recorded (a refused claim, a store gone), the payload
// never runs, Run says why and returns 125 (2 for bad input), and a record
// that exists ends failed.
//
// If the result cannot be recorded (the store vanished), the record stays
// running; ledger recover later reports it unknown, which is the truth as
// far as the ledger can tell. Run says so on stderr and still returns the
// payload's status.
func Run(warn func(format string, args ...any), st ledger.Ledger, id string, o Options) Outcome {
	if o.Claim != nil {
		id = ledger.NewID(time.Now())
	}
	// notices are what --quiet holds back unless the payload fails.
	var notices []string
	notice := warn
	if o.Quiet {
		notice = func(format string, args ...any) { notices = append(notices, fmt.Sprintf(format, args...)) }
	}
	out, err := newCapture(warn, o.KeepOutput, o.Quiet, max(o.KeepOutput, DefaultKeepOutput))
	if err != nil {
		warn("cannot make a pipe for CMD's output: %v", err)
		if o.Claim == nil {
			finish(warn, st, id, ledger.Failed, spec.ExitNotRun, "could not make a pipe for its output: "+err.Error())
		}
		return Outcome{Code: spec.ExitNotRun, ID: id}
	}
	defer out.close()
	keepOutput := func() {
		if o.KeepOutput <= 0 || !out.interposed() {
			return
		}
		out.keep(func() (io.WriteCloser, error) { return st.OpenOutput(id, o.KeepOutput) }, o.KeepOutput, "the output of "+id)
	}
	// recorded: the execution exists in the store (an adopted one does
	// already); tried: ledger run's claim was made, whatever its outcome.
	// Atomic: a claim a stop signal interrupted (runner.ErrStoppedHeld)
	// goes on in its goroutine after Run returned.
	var recorded, tried atomic.Bool
	recorded.Store(o.Claim == nil)
	var refusal atomic.Pointer[error]
	if recorded.Load() {
		keepOutput()
	}
	fence := o.Fence
	if fence == nil {
		fence = context.Background()
	}
	res, err := runner.Run(fence, runner.Options{
		Argv:         o.Argv,
		Grace:        o.Grace,
		Deadline:     o.Deadline,
		Signals:      o.Signals,
		PIDNamespace: o.PIDNamespace,
		Stdout:       out.stdout,
		Stderr:       out.stderr,
		// The id replaces an outer execution's.
		Env: append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
			return strings.HasPrefix(kv, EnvVar+"=")
		}), EnvVar+"="+id),
		OnStart: func(child proc.ID) error {
			if o.Claim != nil {
				tried.Store(true)
				if _, err := o.Claim(id, child); err != nil {
					if errors.Is(err, ledger.ErrRefused) {
						refusal.Store(&err)
					}
					return err
				}
				recorded.Store(true)
				keepOutput()
			} else if _, err := st.SetChild(id, child); err != nil {
				return fmt.Errorf("not running %s: could not record its payload %s: %w", id, child, err)
			}
			// The payload holds the pipes now: ours go.
			out.start()
			return nil
		},
	})
	if err != nil {
		return notStarted(warn, st, id, o, err, refusal.Load(), tried.Load(), recorded.Load())
	}
	out.wait()
	res.Report(notice)
	status, msg := ended(warn, notice, id, o, res)
	code := res.Code()
	if o.Quiet && code != spec.ExitOK {
		out.release()
		for _, n := range notices {
			warn("%s", n)
		}
	}
	if finish(warn, st, id, status, res.ExitCode, msg) {
		retain(warn, st, o)
	}
	return Outcome{Code: code, ID: id}
}

// notStarted ends a Run whose payload runner.Run could not start (err):
// refused is ledger run's refused claim, if any; tried, whether its claim
// was made; recorded, whether the execution exists in the store.
func notStarted(warn func(format string, args ...any), st ledger.Ledger, id string, o Options, err error, refused *error, tried, recorded bool) Outcome {
	if refused != nil {
		return Outcome{Code: spec.ExitNotRun, Refused: *refused}
	}
	code := spec.Code(err, spec.ExitNotRun)
	if o.Claim != nil && !tried {
		// The payload could not be started at all: record that.
		if _, cerr := o.Claim(id, proc.ID{}); cerr != nil {
			if errors.Is(cerr, ledger.ErrRefused) {
				return Outcome{Code: spec.ExitNotRun, Refused: cerr}
			}
			warn("%v", cerr)
			return Outcome{Code: spec.Code(cerr, spec.ExitNotRun)}
		}
		recorded = true
	}
	warn("%v", err)
	if recorded && finish(warn, st, id, ledger.Failed, code, err.Error()) {
		retain(warn, st, o)
	}
	return Outcome{Code: code, ID: id}
}

// ended is the status and message to record for id, whose payload ran and
// ended as res; a deadline is a notice, a lost lease a warning.
func ended(warn, notice func(format string, args ...any), id string, o Options, res runner.Result) (ledger.Status, string) {
	status, msg := ledger.Completed, ""
	switch {
	case res.DeadlineHit:
		status, msg = ledger.Failed, fmt.Sprintf("deadline %v passed; stopped", o.Deadline)
		notice("%s: %s", id, msg)
	case res.Canceled:
		status, msg = ledger.Failed, "its lease could not be renewed; stopped before it ran out"
		warn("%s: %s", id, msg)
	case res.Signaled:
		status, msg = ledger.Failed, fmt.Sprintf("killed by signal %s", spec.SignalName(res.Status.Signal()))
	case res.ExitCode != 0:
		status, msg = ledger.Failed, fmt.Sprintf("exited with status %d", res.ExitCode)
	}
	return status, msg
}

// retain prunes o.Job's terminal executions beyond its newest o.Keep,
// once the result is recorded: in batches, so that a finish costs a
// summary read, and one in retainBatch(o.Keep) finishes the prune (which
// reads what the job keeps). The job then holds at most Keep +
// retainBatch terminal executions, give or take concurrent finishes.
func retain(warn func(format string, args ...any), st ledger.Ledger, o Options) {
	if o.Keep <= 0 || o.Job == "" {
		return
	}
	if batch := retainBatch(o.Keep); batch > 1 {
		sums, err := st.Summaries(o.Job)
		if err == nil && len(sums) == 1 {
			var ended uint64
			for _, n := range sums[0].Runs {
				ended += n
			}
			if ended%uint64(batch) != 0 {
				return
			}
		}
	}
	if _, err := st.Prune(ledger.PruneOptions{Job: o.Job, Keep: o.Keep}); err != nil {
		warn("cannot prune %s to its newest %d executions: %v", o.Job, o.Keep, err)
	}
}

// retainBatch is how many finishes of a job one retention prune serves:
// a tenth of what it keeps, 1 to 100.
func retainBatch(keep int) int { return min(max(keep/10, 1), 100) }

// finish records the result, saying on stderr (one line) when it cannot;
// it reports whether it could.
func finish(warn func(format string, args ...any), st ledger.Ledger, id string, status ledger.Status, code int, msg string) bool {
	// A database lost for a moment: keep trying, with backoff, for as
	// long as the lease keeps the execution ours.
	rec, err := st.FinishRetrying(id, status, &code, ledger.ErrorText(msg))
	switch {
	case err == nil:
		return true
	case errors.Is(err, ledger.ErrRefused):
		err = ledger.KeepLate(st, rec, err, id, status, &code, msg)
		warn("could not record the result of %s (exit status %d): %v", id, code, err)
	case storeGone(st):
		warn("could not record the result of %s (exit status %d): the ledger store %s is gone", id, code, st.Location())
	case errors.Is(err, ledger.ErrNotFound):
		warn("could not record the result of %s (exit status %d): its record is gone from %s", id, code, st.Location())
	default:
		warn("could not record the result of %s (exit status %d; ledger recover will report it unknown): %v", id, code, err)
	}
	return false
}

// storeGone reports whether the store's directory (or its lock file) no
// longer exists: someone removed it while the payload ran (a new store
// made at its path since is another store).
func storeGone(st ledger.Ledger) bool { return st.Gone() }
