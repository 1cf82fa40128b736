// Package execution runs the payload of one ledger execution and records
// what happened: the child's identity as soon as it runs, then its result.
// It is the part shared by adopt and ledger run, which differ only in how
// the execution came to be running. SpawnJob and WaitSpawned (spawn.go)
// are ledger spawn's side of a handoff to a detached adopt worker.
//
// RunJob (ledger run) claims a job and runs its payload; Adopt (adopt)
// takes over a fenced execution and runs it. Both own the lease while the
// payload runs. SpawnJob (ledger spawn) claims a job and hands it to a
// worker. The commands keep only their flags, output and exit codes.
// RunJob and Adopt run a payload that failed again when RunOptions.Retry
// or AdoptOptions.Retry asks (retry.go), each attempt its own execution.
//
//	out := execution.RunJob(tool.Warnf, st, execution.RunOptions{Claim: execution.Claim{Job: "backup"}, Options: execution.Options{Argv: argv, KeepOutput: 64 << 10}})
//	return out.Code // the payload's status, 128+N, 124, 126/127, or 125
package execution

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tether-sh/tether/lib/exit"

	"github.com/tether-sh/tether/lib/handoff"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/proc"
	"github.com/tether-sh/tether/lib/runner"
)

// EnvVar names the execution id in the payload's environment.
const EnvVar = "TETHER_EXECUTION"

// TokenEnvVar names the execution's fencing token (ledger.Record.Token)
// in the payload's environment. Not TETHER_FENCE: `ledger fence` and the
// record's "fenced" are the handoff, which this is not.
const TokenEnvVar = "TETHER_FENCE_TOKEN"

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
	// another host may judge it gone. nil: never. RunJob and Adopt set it
	// to their lease's.
	Fence context.Context
	// Signals is the Catcher CatchSignals started before the execution was
	// claimed or adopted; RunJob waits for it to have caught them before it
	// claims, Adopt before it adopts. nil lets the runner catch its own
	// (Adopt catches them itself before the adoption).
	Signals *runner.Catcher

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
	// Job beyond its newest Keep are pruned (Keep > 0). RunJob and Adopt
	// set Job to the execution's.
	Job  string
	Keep int

	// token is the execution's fencing token when it is known before
	// the payload starts (Adopt's), and stamp sets it once the claim
	// that records the payload gives it (RunJob's): TokenEnvVar.
	token uint64
	stamp *runner.Stamp
	// replaced reports whether the lease found the execution taken
	// over (lease.replaced); nil: never. leaseDone stops renewing the
	// lease, once the payload is gone.
	replaced  func() bool
	leaseDone func()
	// hold (with Quiet) keeps a failed payload's output and notices held
	// back, for Outcome.release to print: only the last attempt's are.
	hold bool
	// attempts is how many attempts a retried run allows (zero: a run
	// without retries); runDeadline is then the whole run's deadline, of
	// which Deadline is what is left.
	attempts    int
	runDeadline time.Duration
}

// Claim is what ledger run and spawn claim, as their flags name it
// (ledger.ClaimOptions without the owner and the payload, which RunJob
// and SpawnJob supply).
type Claim struct {
	Job       string
	Source    string
	Instant   time.Time
	Exclusive bool
	Every     time.Duration
	// Once, Schedule, Attempt and Attempts are ledger.ClaimOptions'.
	Once     bool
	Schedule string
	Attempt  int
	Attempts int
}

// options are the claim's ledger.ClaimOptions for owner.
func (c Claim) options(owner ledger.Owner) ledger.ClaimOptions {
	return ledger.ClaimOptions{Owner: owner, Source: c.Source, Instant: c.Instant, Exclusive: c.Exclusive, Every: c.Every,
		Once: c.Once, Schedule: c.Schedule, Attempt: c.Attempt, Attempts: c.Attempts}
}

// RunOptions says what RunJob claims and how it runs the payload.
type RunOptions struct {
	Options
	Claim Claim
	// Retry says how often, and after what delay, a payload that failed
	// is run again (retry.go); the zero value runs it once. Deadline then
	// bounds all attempts together.
	Retry Retry
}

// AdoptOptions says what Adopt adopts and how it runs the payload.
type AdoptOptions struct {
	Options
	// ID is the fenced execution to adopt.
	ID string
	// AckFile, if set, receives the acknowledgement (handoff.WriteAck)
	// once the adoption is durable, before the payload starts.
	AckFile string
	// Retry, as RunOptions', runs the payload again after a failure, each
	// later attempt claimed afresh for the adopted execution's job,
	// instant, source and schedule, with Claim's Exclusive and Every
	// (retry.go); the other fields of Claim are the record's.
	Retry Retry
	Claim Claim
}

// Outcome is how Run, RunJob or Adopt ended.
type Outcome struct {
	// Code is the exit code the tool should exit with.
	Code int
	// ID is the execution's id ("" if none was claimed).
	ID string
	// Refused is RunJob's refused claim: nothing was recorded nor run,
	// and nothing said; Code is 125.
	Refused error
	// Err is a failure before anything was claimed or run, or Adopt's
	// before the payload started, not yet said; Code is its exit code.
	Err error
	// Failure, when the payload ran and failed of its own accord and its
	// result is on record, says how ("exit 1", "signal KILL"): a failure
	// that another attempt may mend. Empty for a success, a deadline, a
	// lost lease, a signal the runner forwarded, a fault of the tool.
	Failure string
	// release prints what a quiet run held back of a failed payload (its
	// output and notices), when run was told to hold it (Options.hold).
	release func()
}

// CatchSignals starts catching the signals a runner forwards, so that one
// that arrives between the claim and the payload's start neither kills the
// tool (leaving a started execution that never ran) nor is lost: the
// runner forwards it once the payload runs. They are caught in the
// background (runner.CatchSoon), while the caller opens its store and
// forks the payload; RunJob and Adopt wait for them before they claim or
// adopt. One that arrives before takes its default action: the tool dies
// with nothing recorded, and a payload already forked dies held. Stop the
// Catcher when done.
func CatchSignals() *runner.Catcher {
	return runner.CatchSoon(runner.DefaultForward...)
}

// RunJob claims o.Claim.Job for this process and runs the payload as
// Run does. The claim is made with the payload already forked and held
// before its first instruction: one update claims, starts and records it
// (ledger.ClaimOptions.Child and ID), and the payload runs only once that
// is durable. A payload that cannot even be started (not found) is
// recorded as a failed execution. From the claim on, the lease is kept
// (ledger.Ledger.KeepLease); one that cannot be renewed in time stops the
// payload before it runs out, so that no other host runs the job
// meanwhile. A refusal (wrapping ledger.ErrRefused) is returned in
// Outcome.Refused, unsaid; other claim failures are said.
func RunJob(warn func(format string, args ...any), st ledger.Ledger, o RunOptions) Outcome {
	if o.Retry.Retries > 0 {
		return runAttempts(warn, st, o, nil)
	}
	return runJob(warn, st, o)
}

// runJob is one attempt of RunJob.
func runJob(warn func(format string, args ...any), st ledger.Ledger, o RunOptions) Outcome {
	owner, err := ledger.LocalOwner(proc.Self())
	if err != nil {
		return Outcome{Code: exit.NotRun, Err: err}
	}
	l := newLease()
	defer l.end()
	job := o.Claim.Job
	o.Fence, o.Job, o.replaced, o.leaseDone = l.fence, job, l.replaced.Load, l.stop
	id := ledger.NewID(time.Now(), job)
	var token atomic.Uint64
	o.stamp = &runner.Stamp{Name: TokenEnvVar, Value: func() string { return strconv.FormatUint(token.Load(), 10) }}
	claim := func(child proc.ID, stop <-chan struct{}) error {
		if o.Signals != nil {
			o.Signals.Caught()
		}
		co := o.Claim.options(owner)
		co.Child, co.ID, co.Stop = child, id, stop
		sent := time.Now()
		rec, err := st.Claim(job, co)
		if err != nil {
			if errors.Is(err, ledger.ErrRefused) {
				err = fmt.Errorf("not running %s: %w", job, err)
			}
			return &exit.Error{Code: notRunCode(err), Err: err}
		}
		token.Store(rec.Token)
		l.keep(warn, st, id, sent, o.Grace)
		return nil
	}
	return run(warn, st, id, o.Options, claim)
}

// Adopt adopts the fenced execution o.ID for this process, writes
// o.AckFile, and runs the payload as Run does, keeping the lease as
// RunJob does. A failure before the payload started is returned in
// Outcome.Err, unsaid; an adopted execution whose acknowledgement could
// not be written is given up as failed, its payload not run.
func Adopt(warn func(format string, args ...any), st ledger.Ledger, o AdoptOptions) Outcome {
	if o.Retry.Retries > 0 {
		return adoptAttempts(warn, st, o)
	}
	return adopt(warn, st, o)
}

// adopt is Adopt's one attempt.
func adopt(warn func(format string, args ...any), st ledger.Ledger, o AdoptOptions) Outcome {
	self := proc.Self()
	owner, err := ledger.LocalOwner(self)
	if err != nil {
		return Outcome{Code: exit.NotRun, Err: err}
	}
	if o.Signals == nil {
		// Caught before the adoption: a signal that comes before the
		// payload runs is forwarded to it rather than kill the worker.
		o.Signals = CatchSignals()
		defer o.Signals.Stop()
	}
	o.Signals.Caught()
	sent := time.Now()
	rec, err := st.Adopt(o.ID, owner)
	if err != nil {
		// The store's error already reads "cannot adopt ID: why".
		return Outcome{Code: exit.Code(err, exit.NotRun), Err: err}
	}
	l := newLease()
	defer l.end()
	l.keep(warn, st, o.ID, sent, o.Grace)
	if o.AckFile != "" {
		if err := handoff.WriteAck(o.AckFile, o.ID, self); err != nil {
			// We own a running execution but nobody knows: give it up as
			// failed rather than run a payload the dispatcher gave up on.
			code := exit.NotRun
			st.Finish(o.ID, ledger.Failed, &code, ledger.ErrorText("could not write ownership acknowledgement: "+err.Error()))
			err = fmt.Errorf("cannot write ack file: %w", err)
			return Outcome{Code: exit.Code(err, exit.NotRun), ID: o.ID, Err: err}
		}
	}
	o.Fence, o.Job, o.token, o.replaced, o.leaseDone = l.fence, rec.Job, rec.Token, l.replaced.Load, l.stop
	return run(warn, st, o.ID, o.Options, nil)
}

// lease keeps a runner's lease on its execution: fence is done once it
// could not be renewed in time (the payload is then stopped), and end
// stops renewing it.
type lease struct {
	ctx   context.Context
	stop  context.CancelFunc
	fence context.Context
	lost  context.CancelFunc
	// replaced: a renewal found the execution ended by someone else
	// (recovered once its lease ran out): the payload is stopped at once
	// and its result, refused, is kept as late.
	replaced atomic.Bool
}

func newLease() *lease {
	l := &lease{}
	l.ctx, l.stop = context.WithCancel(context.Background())
	l.fence, l.lost = context.WithCancel(context.Background())
	return l
}

// keep renews id's lease, last set just after since, in a goroutine of its
// own until end; losing it leaves the payload StopBudget(grace) to stop.
func (l *lease) keep(warn func(format string, args ...any), st ledger.Ledger, id string, since time.Time, grace time.Duration) {
	replaced := func() {
		l.replaced.Store(true)
		l.lost()
	}
	go st.KeepLease(l.ctx, id, ledger.Keep{Since: since, Stop: ledger.StopBudget(grace), Lost: l.lost, Replaced: replaced, Warn: warn})
}

func (l *lease) end() {
	l.stop()
	l.lost()
}

// notRunCode is the exit code of a runner whose payload did not run
// because of err: 125 — whatever the store, and a database that cannot
// be reached too — or 2 for bad input.
func notRunCode(err error) int {
	var ee *exit.Error
	switch {
	case errors.As(err, &ee):
		if ee.Code == exit.Usage {
			return exit.Usage
		}
	case errors.Is(err, ledger.ErrBadID), errors.Is(err, ledger.ErrBadInput):
		return exit.Usage
	}
	return exit.NotRun
}

// Run runs argv for the running execution id and finishes its record:
// completed iff the payload exited 0, else failed with its exit code (or
// 128+N for signal N, 124 for the deadline, 126/127 when it could not be
// executed). It returns the exit code the tool should exit with.
//
// The payload runs only once its PID@START is durable in the record: if
// that cannot be recorded (a store gone), the payload never runs, Run
// says why and returns 125 (2 for bad input), and the record ends failed.
//
// If the result cannot be recorded (the store vanished, its file system
// full or read-only), the record stays running; ledger recover later
// reports it unknown, which is the truth as far as the ledger can tell.
// Run says so on stderr and returns 3 for the payload's 0 to 3, as for a
// lost write; a status above 3 is returned as it is.
func Run(warn func(format string, args ...any), st ledger.Ledger, id string, o Options) Outcome {
	return run(warn, st, id, o, nil)
}

// run is Run, and with claim RunJob's: claim creates execution id with
// the payload child, held before its first instruction; it is called with
// a zero child when the payload could not even be started, to record that
// as a failed execution. Without claim, the execution is running already
// and only the payload is recorded.
func run(warn func(format string, args ...any), st ledger.Ledger, id string, o Options, claim func(child proc.ID, stop <-chan struct{}) error) Outcome {
	// notices are what --quiet holds back unless the payload fails.
	var notices []string
	notice := warn
	if o.Quiet {
		notice = func(format string, args ...any) { notices = append(notices, fmt.Sprintf(format, args...)) }
	}
	out, err := newCapture(warn, o.KeepOutput, o.Quiet, max(o.KeepOutput, DefaultKeepOutput))
	if err != nil {
		warn("cannot make a pipe for CMD's output: %v", err)
		if claim == nil {
			finish(warn, st, id, ledger.Failed, exit.NotRun, "could not make a pipe for its output: "+err.Error())
			return Outcome{Code: exit.NotRun, ID: id}
		}
		return Outcome{Code: exit.NotRun}
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
	// Atomic: OnStart runs in a goroutine of the runner's, which waits
	// for it even when a stop signal ends the start (heldStop).
	var recorded, tried atomic.Bool
	heldStop := make(chan struct{})
	recorded.Store(claim == nil)
	var refusal atomic.Pointer[error]
	if recorded.Load() {
		keepOutput()
	}
	fence := o.Fence
	if fence == nil {
		fence = context.Background()
	}
	sigs, forwarded, untap := attemptSignals(o)
	defer untap()
	res, err := runner.Run(fence, runner.Options{
		Argv:         o.Argv,
		Grace:        o.Grace,
		Deadline:     o.Deadline,
		Signals:      sigs,
		PIDNamespace: o.PIDNamespace,
		Stdout:       out.stdout,
		Stderr:       out.stderr,
		HeldStop:     heldStop,
		Env:          payloadEnv(id, o.token),
		Stamp:        o.stamp,
		// The one callback: the moment the payload, forked and held, is
		// recorded before its first instruction.
		OnStart: func(child proc.ID) error {
			if claim != nil {
				tried.Store(true)
				if err := claim(child, heldStop); err != nil {
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
	if o.leaseDone != nil {
		// The payload is gone: nothing left to fence, and a renewal
		// must not take the runner's own finish for another's.
		o.leaseDone()
	}
	if err != nil {
		return notStarted(warn, st, id, o, claim, err, refusal.Load(), tried.Load(), recorded.Load())
	}
	return finished(warn, notice, st, id, o, out, res, &notices, forwarded)
}

// payloadEnv is the payload's environment: the caller's, with id in
// EnvVar and token (0: not known yet, or none) in TokenEnvVar in place of
// an outer execution's, and without the store a spawn handed its worker,
// which stays the worker's.
func payloadEnv(id string, token uint64) []string {
	env := append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, EnvVar+"=") || strings.HasPrefix(kv, TokenEnvVar+"=") || strings.HasPrefix(kv, ledger.HandoffEnvVar+"=")
	}), EnvVar+"="+id)
	if token != 0 {
		env = append(env, TokenEnvVar+"="+strconv.FormatUint(token, 10))
	}
	return env
}

// signals is c's channel, nil when there is no Catcher.
func signals(c *runner.Catcher) chan os.Signal {
	if c == nil {
		return nil
	}
	return c.C()
}

// retain prunes o.Job's terminal executions beyond its newest o.Keep,
// once the result is recorded: in batches, so that a finish costs a count
// of the job's terminal executions (endedCount), and one finish in
// retainBatch(o.Keep) prunes (which reads what the job keeps). The job
// then holds at most Keep + retainBatch terminal executions, give or take
// concurrent finishes.
func retain(warn func(format string, args ...any), st ledger.Ledger, o Options) {
	if o.Keep <= 0 || o.Job == "" {
		return
	}
	if batch := retainBatch(o.Keep); batch > 1 {
		if ended, ok := endedCount(st, o.Job); ok && ended%uint64(batch) != 0 {
			return
		}
	}
	if _, err := st.Prune(ledger.PruneOptions{Job: o.Job, Keep: o.Keep}, nil); err != nil {
		warn("cannot prune %s to its newest %d executions: %v", o.Job, o.Keep, err)
	}
}

// endedCount is how many terminal executions job holds: the store's
// cheap count if it has one (ledger.EndedCounter), else its summary's.
func endedCount(st ledger.Ledger, job string) (n uint64, ok bool) {
	if ec, isEC := st.(ledger.EndedCounter); isEC {
		if n, ok := ec.Ended(job); ok {
			return n, true
		}
	}
	sums, err := st.Summaries(job)
	if err != nil || len(sums) != 1 {
		return 0, false
	}
	for _, c := range sums[0].Runs {
		n += c
	}
	return n, true
}

// retainBatch is how many finishes of a job one retention prune serves:
// a tenth of what it keeps, 1 to 100.
func retainBatch(keep int) int { return min(max(keep/10, 1), 100) }

// finish records the result, saying on stderr (one line) when it cannot;
// it reports whether it could.
func finish(warn func(format string, args ...any), st ledger.Ledger, id string, status ledger.Status, code int, msg string) bool {
	done, _ := finishLate(warn, st, id, status, code, msg)
	return done
}

// finishLate is finish, and reports too whether a result that could not
// finish the execution (recover ended it first) was kept on its record as
// late.
func finishLate(warn func(format string, args ...any), st ledger.Ledger, id string, status ledger.Status, code int, msg string) (done, late bool) {
	// A database lost for a moment: keep trying, with backoff, for as
	// long as the lease keeps the execution ours.
	rec, err := st.FinishRetrying(id, status, &code, ledger.ErrorText(msg))
	switch {
	case err == nil:
		return true, false
	case errors.Is(err, ledger.ErrRefused):
		err = ledger.KeepLate(st, rec, err, id, status, &code, msg)
		warn("could not record the result of %s (exit status %d): %v", id, code, err)
		// Kept as late (only the first late result is): on record.
		if r, gerr := st.Get(id); gerr == nil && r.Late != nil && r.Late.Status == status &&
			r.Late.ExitCode != nil && *r.Late.ExitCode == code {
			return false, true
		}
		return false, false
	case storeGone(st):
		warn("could not record the result of %s (exit status %d): the ledger store %s is gone", id, code, st.Location())
	case errors.Is(err, ledger.ErrNotFound):
		warn("could not record the result of %s (exit status %d): its record is gone from %s", id, code, st.Location())
	default:
		warn("could not record the result of %s (exit status %d; ledger recover will report it unknown): %v", id, code, err)
	}
	return false, false
}

// storeGone reports whether the store's directory (or its lock file) no
// longer exists: someone removed it while the payload ran (a new store
// made at its path since is another store).
func storeGone(st ledger.Ledger) bool { return st.Gone() }
