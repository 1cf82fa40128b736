package ledgercmd

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tether-sh/tether/lib/cmd/internal/store"
	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/ledger/location"
	"github.com/tether-sh/tether/lib/runner"
	"github.com/tether-sh/tether/lib/syntax"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/execution"
	"github.com/tether-sh/tether/lib/ledger"
)

// runCmd is `ledger run JOB [--instant T] [--exclusive [--wait D]]
// [--every D] [--deadline D] [--grace D] [--keep-output SIZE] [--quiet]
// [--conflict-exit N] [--keep N] -- CMD...`: the cron one-liner.
//
// Everything before CMD is ledger's: an argument there that starts with "-"
// is a flag, and an unknown one is a usage error (125) before anything is
// recorded or run, never the command (a typo such as --dedline must not
// spend the slot). "--" may be omitted: CMD then starts at the first
// argument after JOB that is neither a flag nor a flag's value, and
// everything from there on is CMD's. The same holds for spawn.
type runCmd struct {
	jobClaim
	scheduled
	Wait cli.Duration `placeholder:"D" help:"With --exclusive: wait up to D for the live run of JOB to end, then run; refused as busy once D has passed. A local owner is waited for through a pidfd; one on another host is looked at again with a backoff of up to 1s. A TERM or INT while waiting ends the wait (128+N), nothing run."`
	runOutput
	retryFlags
	Deadline cli.Duration `placeholder:"D" help:"Stop CMD's process group after D and exit 124. With --retry, D bounds all attempts together, counted from the first claim: each attempt gets what is left, and a retry whose delay would end past D is not made."`
	Grace    cli.Duration `default:"5s" placeholder:"D" help:"Wait at most D after TERM before KILL (deadline and leftovers)."`
	Lease    cli.Duration `default:"30s" placeholder:"D" help:"PostgreSQL store: this run's lease, renewed on the server's clock while it runs; recover on another host judges it gone only once the lease ran out (the file store judges by PID). A run that cannot renew it stops CMD before it runs out; D must be at least 2 × (grace + 0.5s)."`
	PIDNS    bool         `name:"pidns" help:"Run CMD as init of a new PID namespace, with a /proc of its own: nothing it starts survives, even a SIGKILL of ledger run (root; CMD gets only the signals it handles)."`
	Cmd      []string     `arg:"" passthrough:"partial" name:"CMD" help:"-- then the command and its arguments. Every argument before CMD that starts with - is a ledger flag, and an unknown one is an error (125, nothing recorded or run); without --, CMD starts at the first argument after JOB that is neither a flag nor its value."`
}

// exitStatus is a runner's exit code that needs no message: the command
// ran, and its status is the result.
type exitStatus int

func (s exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(s)) }

// commandArgv is the command of run and spawn, as given in args
// (cli.CommandArgv), or a usage error when there is none.
func commandArgv(args, cmd []string) ([]string, error) {
	cmd = cli.CommandArgv(args, cmd)
	if len(cmd) == 0 {
		return nil, exit.Errorf(exit.Usage, "no command: want -- CMD [ARGS...]")
	}
	return cmd, nil
}

func (c *runCmd) Run(inv *invocation) (err error) {
	defer func() { err = asRunner(err) }()
	argv, err := commandArgv(inv.args, c.Cmd)
	if err != nil {
		return err
	}
	if err := ledger.ValidJob(c.Job); err != nil {
		return err
	}
	if err := inv.checkLease(c.Lease.D(), c.Grace.D()); err != nil {
		return err
	}
	if inv.g.JSON {
		// CMD's output is run's: a record printed there would mix with it.
		return exit.Errorf(exit.Usage, "--json: ledger run prints no record (the output is CMD's); read it with ledger latest %s --json", c.Job)
	}
	if err := c.checkFlags(); err != nil {
		return err
	}
	if c.Wait.D() < 0 || c.Wait.D() > 0 && !c.Exclusive {
		return exit.Errorf(exit.Usage, "--wait waits for the live run of an --exclusive run: give --exclusive too")
	}
	if err := c.scheduled.checkJitter(c.Deadline.D()); err != nil {
		return err
	}
	cl, notDue, err := c.scheduled.claim(c.jobClaim, clockNow())
	if err != nil {
		return err
	}
	if notDue != nil {
		// Decided without the store: a tick that is not the slot's
		// costs no more than ledger's start.
		return c.refused(inv, fmt.Errorf("not running %s: %w", c.Job, notDue))
	}
	// The store is opened before any signal is caught: a TERM while it
	// opens (a database connecting, a store migrated under its lock)
	// ends ledger run at once, nothing claimed nor run, rather than wait
	// in the catcher until the open is done. From here on, one that
	// comes before the claim ends the held start (runner.HeldStop).
	st, err := inv.openWith(location.Options{Lease: c.Lease.D()})
	if err != nil {
		return notRun(err)
	}
	defer st.Close()
	sigs := execution.CatchSignals()
	defer sigs.Stop()
	o := c.runOptions(argv, cl, sigs)
	// A slot already run, or a period that surely still holds, is
	// refused before the payload is forked and held for the claim (and
	// before a --jitter delay): a --catch-up or --every line's every
	// other tick costs one read.
	if err := slotTaken(st, cl); err != nil {
		return c.refused(inv, fmt.Errorf("not running %s: %w", c.Job, err))
	}
	if err := everyHeld(st, cl, clockNow()); err != nil {
		return c.refused(inv, fmt.Errorf("not running %s: %w", c.Job, err))
	}
	if c.Jitter.D() > 0 {
		d, err := c.scheduled.delay(c.Job, "running", sigs, c.Quiet, inv.tool.Warnf)
		if err != nil {
			return err
		}
		if o.Deadline > 0 {
			o.Deadline -= d
		}
	}
	until := time.Now().Add(c.Wait.D())
	lw := execution.LiveWait{Job: c.Job, Until: until, Sigs: sigs.C(), Waiting: func(live []ledger.Record) {
		if !c.Quiet {
			inv.tool.Warnf("waiting up to %v for execution %s of %s (%s, owner %s) to end", time.Until(until).Round(100*time.Millisecond), live[0].ID, c.Job, live[0].State(), live[0].Owner)
		}
	}}
	for {
		out := execution.RunJob(inv.tool.Warnf, st, o)
		if out.Err != nil {
			return notRun(out.Err)
		}
		if out.Refused == nil {
			if out.Code != 0 {
				return exitStatus(out.Code)
			}
			return nil
		}
		if c.Wait.D() > 0 {
			w, sig, err := lw.Wait(st)
			switch {
			case err != nil:
				return notRun(fmt.Errorf("not running %s: waiting for its live run: %w", c.Job, err))
			case w == execution.Ended:
				continue
			case w == execution.Interrupted:
				s, _ := sig.(syscall.Signal)
				return exit.Errorf(exit.ForSignal(s), "not running %s: %s while waiting for its live run", c.Job, syntax.SignalName(s))
			case w == execution.TimeUp:
				out.Refused = fmt.Errorf("%w (still so after waiting %v)", out.Refused, c.Wait.D())
			}
		}
		return c.refused(inv, out.Refused)
	}
}

// runOptions are what RunJob is to claim (cl) and run (argv), the
// signals caught by sigs.
func (c *runCmd) runOptions(argv []string, cl execution.Claim, sigs *runner.Catcher) execution.RunOptions {
	o := execution.RunOptions{Options: c.runOutput.execOptions(), Claim: cl, Retry: c.retry()}
	o.Argv, o.Grace, o.Deadline, o.Signals, o.PIDNamespace = argv, c.Grace.D(), c.Deadline.D(), sigs, c.PIDNS
	return o
}

// checkFlags validates the output and retry flags.
func (c *runCmd) checkFlags() error {
	if err := c.runOutput.check(); err != nil {
		return err
	}
	return c.retryFlags.check()
}

// retryFlags are --retry and --retry-delay: run's, and spawn's, which
// hands them to its worker.
type retryFlags struct {
	Retry      int          `placeholder:"N" help:"When CMD fails (a non-zero exit, or a signal ledger did not forward), run it again up to N more times, each attempt its own execution of JOB with the same instant and source (attempt k of N+1), claimed afresh after a delay; the exit status is the last attempt's. Not retried: a refusal, the deadline (124), a fault of ledger (125), CMD not runnable (126, 127), a TERM or INT to ledger (which, during a delay, ends the run at once with 128+N)."`
	RetryDelay cli.Duration `name:"retry-delay" default:"10s" placeholder:"D" help:"With --retry: after failed attempt k, wait D times 2^(k-1), at most 10 times D, with equal jitter (a time drawn between half of it and all of it), before the next attempt."`
}

// maxRetryDelay bounds --retry-delay: its cap, ten of it, stays within a
// day and a half.
const maxRetryDelay = 3 * time.Hour

// check validates the flags together.
func (r retryFlags) check() error {
	if r.Retry < 0 {
		return exit.Errorf(exit.Usage, "--retry %d: want 0 (no retry) or more", r.Retry)
	}
	if r.Retry >= ledger.MaxAttempts {
		return exit.Errorf(exit.Usage, "--retry %d: want at most %d", r.Retry, ledger.MaxAttempts-1)
	}
	if d := r.RetryDelay.D(); d <= 0 || d > maxRetryDelay {
		return exit.Errorf(exit.Usage, "--retry-delay %v: want more than 0 and at most 3h", d)
	}
	return nil
}

// retry is what the flags ask of RunJob.
func (r retryFlags) retry() execution.Retry {
	return execution.Retry{Retries: r.Retry, Delay: r.RetryDelay.D()}
}

// runOutput are the flags of a runner about its output, its refusals and
// its retention: run and spawn (spawn hands them to its worker).
type runOutput struct {
	KeepOutput   cli.Size     `name:"keep-output" default:"64KiB" placeholder:"SIZE" help:"Keep the last SIZE bytes of CMD's stdout and stderr with the execution, one combined stream, as they are written (ledger output ID prints them); both still reach the caller unchanged. 0 keeps nothing and leaves CMD's streams as they are. A stream that is a terminal is left to CMD and not kept (but with --quiet). SIZE is bytes or K, M, G (1K = 1024)."`
	Quiet        bool         `help:"As chronic: print nothing when CMD succeeds or the run is refused as expected (its instant or slot taken, the slot not due, --exclusive busy, --every not due); when CMD fails, print its output (the last --keep-output, at least 64KiB, of each stream, to its own stream) and the notices held back. A fault of ledger itself (the store, a pipe) is always said."`
	ConflictExit conflictExit `name:"conflict-exit" placeholder:"N" help:"Exit N when the run is refused as expected (its instant or slot taken, the slot not due, --exclusive busy, --every not due), as flock -E. Without it, 125, as for a fault of ledger; N cannot be one of ledger's own statuses (2, 3, 124-127), so that a fault never exits N."`
	Keep         int          `default:"1000" placeholder:"N" help:"Retention: once the run is recorded, prune the terminal executions of JOB beyond its newest N (0 keeps every one), so that a frequent job does not grow the store forever; ledger prune still prunes by age."`
}

// defaultKeep is --keep's default, as in the tags of run, spawn and adopt.
const defaultKeep = 1000

// check validates the flags together.
func (r runOutput) check() error {
	if r.Keep < 0 {
		return exit.Errorf(exit.Usage, "--keep %d: want 0 (keep every execution) or more", r.Keep)
	}
	return nil
}

// execOptions are the execution options the flags name.
func (r runOutput) execOptions() execution.Options {
	return execution.Options{KeepOutput: r.KeepOutput.N(), Quiet: r.Quiet, Keep: r.Keep}
}

// refused is the end of a run refused as expected: said unless quiet,
// with the --conflict-exit status.
func (r runOutput) refused(inv *invocation, err error) error {
	code := r.ConflictExit.code()
	if !r.Quiet {
		inv.tool.Warnf("%v", err)
	}
	if code == exit.OK {
		return nil
	}
	return exitStatus(code)
}

// conflictExit is --conflict-exit N: 0-255, not one of the runners' own
// statuses.
type conflictExit struct {
	n     int
	given bool
}

// UnmarshalText implements encoding.TextUnmarshaler for kong.
func (c *conflictExit) UnmarshalText(b []byte) error {
	n, err := strconv.Atoi(string(b))
	if err != nil || n < 0 || n > 255 {
		return fmt.Errorf("invalid exit status %q: want 0-255", b)
	}
	switch n {
	case exit.Usage, exit.System, exit.Deadline, exit.NotRun, exit.NoExec, exit.NotFound:
		return fmt.Errorf("%d is an exit status of ledger's own (2 usage, 3 system error, 124 deadline, 125 fault, 126 and 127 CMD not runnable): choose another", n)
	}
	c.n, c.given = n, true
	return nil
}

// code is the status of an expected refusal.
func (c conflictExit) code() int {
	if !c.given {
		return exit.NotRun
	}
	return c.n
}

// notRun gives err the exit code of a runner that did not start its
// command: 125 — whatever the store, and a database that cannot be
// reached or a missing tether-pg too: CMD did not run — or 2 for bad
// input.
func notRun(err error) error {
	return &exit.Error{Code: store.NotRun(err), Err: err}
}

// checkLease refuses, on a PostgreSQL store (the only one that keeps
// leases), a lease too short for the payload to be stopped with grace
// before it runs out (location.CheckLease): a usage error.
func (inv *invocation) checkLease(lease, grace time.Duration) error {
	loc, err := inv.location()
	if err != nil {
		return nil
	}
	if err := location.CheckLeaseAt(loc, lease, grace); err != nil {
		return exit.Errorf(exit.Usage, "%s", strings.TrimPrefix(err.Error(), ledger.ErrBadInput.Error()+": "))
	}
	return nil
}

// asRunner gives a runner's usage error, bad input included, the exit
// code of a command that tether did not run: 125, as timeout and env do,
// so that a cron line can tell it from the command's own 2.
func asRunner(err error) error {
	var status exitStatus
	if err == nil || errors.As(err, &status) || exitCode(err) != exit.Usage {
		return err
	}
	return &exit.Error{Code: exit.NotRun, Err: err}
}
