// Package execution runs the payload of one ledger execution and records
// what happened: the child's identity as soon as it runs, then its result.
// It is the part shared by adopt and ledger run, which differ only in how
// the execution came to be running. Spawn and WaitSpawned (spawn.go) are
// ledger spawn's side of a handoff to a detached adopt worker.
//
//	code := execution.Run(tool.Warnf, st, rec.ID, execution.Options{Argv: argv})
//	return code // the payload's status, 128+N, 124, 126/127, or 125
package execution

import (
	"context"
	"errors"
	"fmt"
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
	// already (adopted) and only the payload is recorded.
	Claim func(id string, child proc.ID) (ledger.Record, error)
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
func Run(warn func(format string, args ...any), st ledger.Ledger, id string, o Options) int {
	if o.Claim != nil {
		id = ledger.NewID(time.Now())
	}
	// recorded: the execution exists in the store (an adopted one does
	// already); tried: ledger run's claim was made, whatever its outcome.
	// Atomic: a claim a stop signal interrupted (runner.ErrStoppedHeld)
	// goes on in its goroutine after Run returned.
	var recorded, tried atomic.Bool
	recorded.Store(o.Claim == nil)
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
		// The id replaces an outer execution's.
		Env: append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
			return strings.HasPrefix(kv, EnvVar+"=")
		}), EnvVar+"="+id),
		OnStart: func(child proc.ID) error {
			if o.Claim != nil {
				tried.Store(true)
				if _, err := o.Claim(id, child); err != nil {
					return err
				}
				recorded.Store(true)
				return nil
			}
			if _, err := st.SetChild(id, child); err != nil {
				return fmt.Errorf("not running %s: could not record its payload %s: %w", id, child, err)
			}
			return nil
		},
	})
	if err != nil {
		code := spec.Code(err, spec.ExitNotRun)
		if o.Claim != nil && !tried.Load() {
			// The payload could not be started at all: record that.
			if _, cerr := o.Claim(id, proc.ID{}); cerr != nil {
				warn("%v", cerr)
				return spec.Code(cerr, spec.ExitNotRun)
			}
			recorded.Store(true)
		}
		warn("%v", err)
		if recorded.Load() {
			finish(warn, st, id, ledger.Failed, code, err.Error())
		}
		return code
	}
	res.Report(warn)
	status, msg := ledger.Completed, ""
	switch {
	case res.DeadlineHit:
		status, msg = ledger.Failed, fmt.Sprintf("deadline %v passed; stopped", o.Deadline)
		warn("%s: %s", id, msg)
	case res.Canceled:
		status, msg = ledger.Failed, "its lease could not be renewed; stopped before it ran out"
		warn("%s: %s", id, msg)
	case res.Signaled:
		status, msg = ledger.Failed, fmt.Sprintf("killed by signal %s", spec.SignalName(res.Status.Signal()))
	case res.ExitCode != 0:
		status, msg = ledger.Failed, fmt.Sprintf("exited with status %d", res.ExitCode)
	}
	finish(warn, st, id, status, res.ExitCode, msg)
	return res.Code()
}

// finish records the result, saying on stderr (one line) when it cannot;
// it reports whether it could.
func finish(warn func(format string, args ...any), st ledger.Ledger, id string, status ledger.Status, code int, msg string) bool {
	finish := st.Finish
	if r, ok := st.(retryingFinisher); ok {
		// A database lost for a moment: keep trying, with backoff, for
		// as long as the lease keeps the execution ours.
		finish = r.FinishRetrying
	}
	rec, err := finish(id, status, &code, ledger.ErrorText(msg))
	switch {
	case err == nil:
		return true
	case errors.Is(err, ledger.ErrRefused):
		if lr, ok := st.(lateRecorder); ok && (rec.Status == ledger.Unknown || rec.Status == ledger.Abandoned) {
			if kept, lerr := lr.RecordLate(id, status, &code, msg); lerr == nil && kept {
				err = fmt.Errorf("%w (the result is kept on the record as late)", err)
			}
		}
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

// retryingFinisher is a store whose Finish can be retried through a
// passing outage (PostgreSQL).
type retryingFinisher interface {
	FinishRetrying(id string, status ledger.Status, exitCode *int, errMsg string) (ledger.Record, error)
}

// lateRecorder is a store that keeps a result refused because recovery
// ended the execution first (PostgreSQL: show --json's "late").
type lateRecorder interface {
	RecordLate(id string, status ledger.Status, exitCode *int, errMsg string) (bool, error)
}
