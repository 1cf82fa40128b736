package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tether-sh/tether/lib/ledger/location"
	"github.com/tether-sh/tether/lib/spec"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/execution"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/proc"
)

// runCmd is `ledger run JOB [--instant T] [--exclusive] [--deadline D]
// [--grace D] -- CMD...`: the cron one-liner.
//
// Everything before CMD is ledger's: an argument there that starts with "-"
// is a flag, and an unknown one is a usage error (2) before anything is
// recorded or run, never the command (a typo such as --dedline must not
// spend the slot). "--" may be omitted: CMD then starts at the first
// argument after JOB that is neither a flag nor a flag's value, and
// everything from there on is CMD's. The same holds for spawn.
type runCmd struct {
	jobClaim
	Deadline cli.Duration `placeholder:"D" help:"Stop CMD's process group after D and exit 124."`
	Grace    cli.Duration `default:"5s" placeholder:"D" help:"Wait at most D after TERM before KILL (deadline and leftovers)."`
	Lease    cli.Duration `default:"30s" placeholder:"D" help:"PostgreSQL store: this run's lease, renewed on the server's clock while it runs; recover on another host judges it gone only once the lease ran out (the file store judges by PID). A run that cannot renew it stops CMD before it runs out; D must be at least 2 × (grace + 0.5s)."`
	PIDNS    bool         `name:"pidns" help:"Run CMD as init of a new PID namespace, with a /proc of its own: nothing it starts survives, even a SIGKILL of ledger run (root; CMD gets only the signals it handles)."`
	Cmd      []string     `arg:"" passthrough:"partial" name:"CMD" help:"-- then the command and its arguments. Every argument before CMD that starts with - is a ledger flag, and an unknown one is an error (2); without --, CMD starts at the first argument after JOB that is neither a flag nor its value."`
}

// exitStatus is a runner's exit code that needs no message: the command
// ran, and its status is the result.
type exitStatus int

func (s exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(s)) }

// commandArgv strips the leading "--" kong leaves in a passthrough list.
func commandArgv(cmd []string) ([]string, error) {
	if len(cmd) > 0 && cmd[0] == "--" {
		cmd = cmd[1:]
	}
	if len(cmd) == 0 {
		return nil, spec.Errorf(spec.ExitUsage, "no command: want -- CMD [ARGS...]")
	}
	return cmd, nil
}

func (c *runCmd) Run(e *env) error {
	argv, err := commandArgv(c.Cmd)
	if err != nil {
		return err
	}
	if err := ledger.ValidJob(c.Job); err != nil {
		return err
	}
	if err := e.checkLease(c.Lease.D(), c.Grace.D()); err != nil {
		return err
	}
	sigs, stopSignals := execution.CatchSignals()
	defer stopSignals()
	st, owner, err := openAsOwner(e, c.Lease.D())
	if err != nil {
		return err
	}
	defer st.Close()
	ctx, stopLease := context.WithCancel(context.Background())
	defer stopLease()
	// A lease that cannot be renewed in time stops the payload before it
	// runs out (fence), so that no other host runs the job meanwhile.
	fence, lost := context.WithCancel(context.Background())
	defer lost()
	// The claim is made with the payload already forked and held before
	// its first instruction: one update claims, starts and records it.
	code := execution.Run(e.tool.Warnf, st, "", execution.Options{
		Argv: argv, Grace: c.Grace.D(), Deadline: c.Deadline.D(), Signals: sigs, PIDNamespace: c.PIDNS, Fence: fence,
		Claim: func(id string, child proc.ID) (ledger.Record, error) {
			o := c.options()
			o.Owner, o.Child, o.ID = owner, child, id
			sent := time.Now()
			rec, err := claimJob(st, "running", c.Job, o)
			if l, ok := st.(location.Leaser); ok && err == nil {
				go l.KeepLease(ctx, rec.ID, location.Keep{Since: sent, Stop: location.StopBudget(c.Grace.D()), Lost: lost, Warn: e.tool.Warnf})
			}
			return rec, err
		},
	})
	if code != 0 {
		return exitStatus(code)
	}
	return nil
}

// notRun gives err the exit code of a runner that did not start its
// command: 125 — whatever the store, and a database that cannot be
// reached or a missing tether-pg too: CMD did not run — or 2 for bad
// input.
func notRun(err error) error {
	code := exitCode(err)
	if code != spec.ExitUsage {
		code = spec.ExitNotRun
	}
	return &spec.ExitError{Code: code, Err: err}
}

// checkLease refuses, on a PostgreSQL store (the only one that keeps
// leases), a lease too short for the payload to be stopped with grace
// before it runs out (location.CheckLease): a usage error.
func (e *env) checkLease(lease, grace time.Duration) error {
	loc, err := e.location()
	if err != nil || !location.IsPostgres(loc) {
		return nil
	}
	if err := location.CheckLease(lease, grace); err != nil {
		return spec.Errorf(spec.ExitUsage, "%s", strings.TrimPrefix(err.Error(), ledger.ErrBadInput.Error()+": "))
	}
	return nil
}

// claimAsSelf opens the store and claims job with this process as owner:
// the runner is what must stay alive while the job is in its hands. verb
// ("running", "spawning") words the refusal. Errors are ready to return.
func claimAsSelf(e *env, verb string, c jobClaim, lease time.Duration) (ledger.Ledger, ledger.Record, error) {
	st, owner, err := openAsOwner(e, lease)
	if err != nil {
		return nil, ledger.Record{}, err
	}
	o := c.options()
	o.Owner = owner
	rec, err := claimJob(st, verb, c.Job, o)
	return st, rec, err
}

// openAsOwner opens the store for a runner and names this process as the
// owner of what it claims. Errors are ready to return.
func openAsOwner(e *env, lease time.Duration) (ledger.Ledger, ledger.Owner, error) {
	st, err := e.openWith(location.Options{Lease: lease})
	if err != nil {
		return nil, ledger.Owner{}, notRun(err)
	}
	owner, err := ledger.LocalOwner(proc.Self())
	if err != nil {
		return nil, ledger.Owner{}, notRun(err)
	}
	return st, owner, nil
}

// claimJob claims job, wording a refusal with verb. Errors are ready to
// return.
func claimJob(st ledger.Ledger, verb, job string, o ledger.ClaimOptions) (ledger.Record, error) {
	rec, err := st.Claim(job, o)
	if err != nil {
		if errors.Is(err, ledger.ErrRefused) {
			err = fmt.Errorf("not %s %s: %w", verb, job, err)
		}
		return ledger.Record{}, notRun(err)
	}
	return rec, nil
}
