package execution

// How a run ends: the result recorded and the outcome returned, whether
// its payload ran (finished) or could not be started (notStarted).

import (
	"errors"
	"fmt"

	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/proc"
	"github.com/tether-sh/tether/lib/runner"
	"github.com/tether-sh/tether/lib/syntax"
)

// notStarted ends a run whose payload runner.Run could not start (err):
// claim is RunJob's, if any; refused, its refusal; tried, whether it was
// made; recorded, whether the execution exists in the store.
func notStarted(warn func(format string, args ...any), st ledger.Ledger, id string, o Options, claim func(proc.ID, <-chan struct{}) error, err error, refused *error, tried, recorded bool) Outcome {
	if refused != nil {
		return Outcome{Code: exit.NotRun, Refused: *refused}
	}
	code := exit.Code(err, exit.NotRun)
	if claim != nil && !tried {
		// The payload could not be started at all: record that.
		if cerr := claim(proc.ID{}, nil); cerr != nil {
			if errors.Is(cerr, ledger.ErrRefused) {
				return Outcome{Code: exit.NotRun, Refused: cerr}
			}
			warn("%v", cerr)
			return Outcome{Code: exit.Code(cerr, exit.NotRun)}
		}
		recorded = true
	}
	warn("%v", err)
	if !recorded {
		return Outcome{Code: code}
	}
	recordedCode := code
	if errors.Is(err, runner.ErrStoppedHeld) {
		// Claimed as the stop signal came, and never released: the
		// payload did not run (125), whatever the signal the tool exits
		// with; failed, its instant may run again.
		recordedCode = exit.NotRun
	}
	if finish(warn, st, id, ledger.Failed, recordedCode, err.Error()) {
		retain(warn, st, o)
	}
	return Outcome{Code: code, ID: id}
}

// ended is the status and message to record for id, whose payload ran and
// ended as res; a deadline is a notice, a lost lease a warning.
//
// A payload stopped for a lost lease that exits 0 is recorded completed,
// as the tool exits 0: it ended on its own between the runner's last look
// and the TERM, or answered the TERM with success; the runner cannot tell
// the two apart, and the status is the payload's own word. Recorded
// failed, its slot would be free for another run although this one had
// done its work (the fault-injected fleet saw a slot run to its end
// twice).
func ended(warn, notice func(format string, args ...any), id string, o Options, res runner.Result) (ledger.Status, string) {
	status, msg := ledger.Completed, ""
	switch {
	case res.DeadlineHit:
		d := o.Deadline
		if o.runDeadline > 0 {
			d = o.runDeadline
		}
		status, msg = ledger.Failed, fmt.Sprintf("deadline %v passed; stopped", d)
		notice("%s: %s", id, msg)
	case res.Canceled && o.replaced != nil && o.replaced():
		status, msg = ledger.Failed, "its execution was taken over (recovered once its lease ran out); stopped at once"
		warn("%s: %s", id, msg)
	case res.Canceled && !res.Signaled && res.ExitCode == 0:
		warn("%s: its lease could not be renewed; it exited 0 as it was being stopped: recorded completed", id)
	case res.Canceled:
		status, msg = ledger.Failed, "its lease could not be renewed; stopped before it ran out"
		warn("%s: %s", id, msg)
	case res.Signaled:
		status, msg = ledger.Failed, fmt.Sprintf("killed by signal %s", syntax.SignalName(res.Status.Signal()))
	case res.ExitCode != 0:
		status, msg = ledger.Failed, fmt.Sprintf("exited with status %d", res.ExitCode)
	}
	return status, msg
}

// finished ends a run whose payload ran and ended as res: it records
// the result and returns the run's outcome. notices are what --quiet held
// back (notice appends to them: the report of res's leftovers too); forwarded reports whether a stop signal was passed on to the
// payload (a run stopped so is not retried).
func finished(warn, notice func(format string, args ...any), st ledger.Ledger, id string, o Options, out *capture, res runner.Result, notices *[]string, forwarded func() bool) Outcome {
	out.wait()
	res.Report(notice)
	status, msg := ended(warn, notice, id, o, res)
	code := res.Code()
	release := quietRelease(warn, o, code, out, *notices)
	done, late := finishLate(warn, st, id, status, res.ExitCode, msg)
	if done {
		retain(warn, st, o)
	}
	// Its output did not all reach the caller, or its result is not on
	// record (a full, read-only or failing file system, a store gone),
	// which a line said: CMD's 0 would tell a cron line or a check
	// otherwise. 3, as for any lost write (CONTRACT.md §1.2); a status
	// above 3 says more. The record keeps the payload's own status; a
	// result kept as late (recover judged the execution first) is on it.
	if (out.lost.Load() || !done && !late) && code <= exit.System {
		code = exit.System
	}
	// Its result is not the execution's (kept as late at most): another
	// host recovered it, and may have run the job again. Never CMD's own
	// status, which would read as this run's: 3, as for a result that
	// could not be recorded (CONTRACT.md §2).
	if !done && (late || o.replaced != nil && o.replaced()) {
		code = exit.System
	}
	failure := ""
	if done && !forwarded() {
		failure = failureOf(res, code)
	}
	return Outcome{Code: code, ID: id, Failure: failure, release: release}
}
