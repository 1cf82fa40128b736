package ledgercmd

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/cmd/internal/sibling"
	"github.com/tether-sh/tether/lib/execution"
	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/handoff"
	"github.com/tether-sh/tether/lib/ledger/location"
	"github.com/tether-sh/tether/lib/stop"
)

// spawnCmd is `ledger spawn JOB ... -- CMD...`: the restart-safe handoff.
type spawnCmd struct {
	jobClaim
	scheduled
	retryFlags
	Scope        string       `default:"auto" enum:"auto,require,never" placeholder:"auto|require|never" help:"Run the worker in a systemd-run --user --scope: auto (when it works: probed once per boot, the answer kept in the store), require (probed every time), never."`
	AckTimeout   cli.Duration `default:"10s" placeholder:"D" help:"Wait at most D for the worker to take ownership."`
	Wait         bool         `help:"Wait for the execution to end and exit with its recorded status. A signal (TERM, INT) to the waiting spawn ends only the waiting (exit 128+N): the worker keeps running and finishes the record."`
	Log          string       `type:"path" placeholder:"F" help:"Append the worker's output to F, a regular file (created 0600 if missing; a symbolic link, FIFO or device there is refused) (default: discard)."`
	Lease        cli.Duration `default:"30s" placeholder:"D" help:"PostgreSQL store: the lease of the claim and of the worker, renewed while it runs on the server's clock; recover on another host judges it gone only once it ran out."`
	KeepOutput   cli.Size     `name:"keep-output" default:"64KiB" placeholder:"SIZE" help:"The worker keeps the last SIZE bytes of CMD's stdout and stderr with the execution (ledger output ID prints them); they still go to --log. 0 keeps nothing."`
	ConflictExit conflictExit `name:"conflict-exit" placeholder:"N" help:"Exit N when the spawn is refused as expected (its instant or slot taken, the slot not due, --exclusive busy, --every not due), as flock -E. Without it, 125, as for a fault; N cannot be 2, 3 or 124-127."`
	Keep         int          `default:"1000" placeholder:"N" help:"Retention: once the worker recorded the result, it prunes the terminal executions of JOB beyond its newest N (0 keeps every one)."`
	Cmd          []string     `arg:"" passthrough:"partial" name:"CMD" help:"-- then the command and its arguments. Every argument before CMD that starts with - is a ledger flag, and an unknown one is an error (125, nothing recorded or run); without --, CMD starts at the first argument after JOB that is neither a flag nor its value."`
}

// Run opens the store and hands JOB to execution.SpawnJob, which claims
// it with this process as owner and holds the dispatcher's protocol; here
// are only the flags, the output and the exit status.
func (c *spawnCmd) Run(inv *invocation) (err error) {
	defer func() { err = asRunner(err) }()
	argv, err := commandArgv(inv.args, c.Cmd)
	if err != nil {
		return err
	}
	if c.AckTimeout.D() <= 0 {
		return exit.Errorf(exit.Usage, "--ack-timeout must be positive, not %v", c.AckTimeout.D())
	}
	// The worker (adopt) stops its payload with the default grace.
	if err := inv.checkLease(c.Lease.D(), stop.DefaultGrace); err != nil {
		return err
	}
	if err := c.checkFlags(); err != nil {
		return err
	}
	if err := appendable(c.Log); err != nil {
		return err
	}
	if err := c.scheduled.checkJitter(0); err != nil {
		return err
	}
	cl, notDue, err := c.scheduled.claim(c.jobClaim, clockNow())
	if err != nil {
		return err
	}
	if notDue != nil {
		return runOutput{ConflictExit: c.ConflictExit}.refused(inv, fmt.Errorf("not spawning %s: %w", c.Job, notDue))
	}
	adoptPath, err := sibling.Find("adopt")
	if err != nil {
		return notRun(err)
	}
	st, err := inv.openWith(location.Options{Lease: c.Lease.D()})
	if err != nil {
		return notRun(err)
	}
	defer st.Close()
	if err := slotTaken(st, cl); err != nil {
		return runOutput{ConflictExit: c.ConflictExit}.refused(inv, fmt.Errorf("not spawning %s: %w", c.Job, err))
	}
	if c.Jitter.D() > 0 {
		sigs := execution.CatchSignals()
		_, err := c.scheduled.delay(c.Job, "spawning", sigs, false, inv.tool.Warnf)
		sigs.Stop()
		if err != nil {
			return err
		}
	}
	o := execution.SpawnJobOptions{Claim: cl, SpawnOptions: execution.SpawnOptions{
		Adopt: adoptPath, Argv: argv, Scope: execution.Scope(c.Scope), AckTimeout: c.AckTimeout.D(), Log: c.Log,
	}}
	c.workerFlags(&o)
	if loc, err := inv.location(); err == nil {
		// A URL through the environment: its password must not show in
		// ps, nor reach the payload (adopt drops the variable from its
		// environment).
		env, flags := location.Handoff(loc, c.Lease.D())
		o.Env, o.AdoptFlags = env, append(o.AdoptFlags, flags...)
	}
	sp, refused, err := execution.SpawnJob(inv.tool.Warnf, st, o)
	if refused != nil {
		return runOutput{ConflictExit: c.ConflictExit}.refused(inv, refused)
	}
	if err != nil {
		return err
	}
	id := sp.ID
	lost := false
	if err := c.print(inv, id, sp.Ack, sp.Worker.Scoped()); err != nil {
		// The worker owns the execution and runs the payload whatever
		// happens here: a caller that retries on this error must know.
		lostErr := idLost(c.Job, id, err, fmt.Sprintf("the worker (pid %d) runs it: ledger latest %s", sp.Ack.PID, c.Job))
		if !c.Wait {
			return lostErr
		}
		// --wait still waits: its status, when above 3, says more than
		// the lost line's 3 (CONTRACT.md §1.2).
		inv.tool.Warnf("%v", lostErr)
		lost = true
	}
	if !c.Wait {
		return nil
	}
	code, err := execution.WaitSpawned(st, id, sp.Worker)
	if err != nil {
		if lost && exit.Code(err, exit.System) <= exit.System {
			inv.tool.Warnf("%v", err)
			return exitStatus(exit.System)
		}
		return err
	}
	if lost && code <= exit.System {
		code = exit.System
	}
	if code != exit.OK {
		return exitStatus(code)
	}
	return nil
}

// checkFlags validates --keep and the retry flags.
func (c *spawnCmd) checkFlags() error {
	if c.Keep < 0 {
		return exit.Errorf(exit.Usage, "--keep %d: want 0 (keep every execution) or more", c.Keep)
	}
	return c.retryFlags.check()
}

// workerFlags are the flags spawn hands its worker: only what differs
// from adopt's defaults (the same as spawn's). --retry goes to the worker,
// which makes the later attempts: it claims them as this claim was made
// (the record holds the rest: job, instant, source, schedule); the claim
// is attempt 1.
func (c *spawnCmd) workerFlags(o *execution.SpawnJobOptions) {
	if c.KeepOutput.N() != execution.DefaultKeepOutput {
		o.AdoptFlags = append(o.AdoptFlags, "--keep-output", strconv.FormatInt(c.KeepOutput.N(), 10))
	}
	if c.Keep != defaultKeep {
		o.AdoptFlags = append(o.AdoptFlags, "--keep", strconv.Itoa(c.Keep))
	}
	if c.Retry == 0 {
		return
	}
	o.Claim.Attempt, o.Claim.Attempts = 1, c.Retry+1
	o.AdoptFlags = append(o.AdoptFlags, "--retry", strconv.Itoa(c.Retry), "--retry-delay", c.RetryDelay.D().String())
	if c.Exclusive {
		o.AdoptFlags = append(o.AdoptFlags, "--retry-exclusive")
	}
	if c.Every.D() > 0 {
		o.AdoptFlags = append(o.AdoptFlags, "--retry-every", c.Every.D().String())
	}
}

// appendable refuses (2) a --log path that holds something other than a
// regular file, before anything is claimed: the worker's output is
// appended to the file named, never through a symbolic link planted there
// (to its target, as root) nor to a FIFO or a device. Nothing there is
// fine: the file is created. The open itself refuses the same
// (lib/handoff), for a link planted after this look.
func appendable(path string) error {
	if path == "" {
		return nil
	}
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().IsRegular() {
		return nil
	}
	return exit.Errorf(exit.Usage, "--log %s: not a regular file (%s); the worker appends to it itself, following no link", path, fileKind(fi.Mode()))
}

// print writes "ID WORKER_PID" (or a JSON object).
func (c *spawnCmd) print(inv *invocation, id string, a handoff.Ack, scope bool) error {
	if inv.g.JSON {
		return json.NewEncoder(inv.tool.Stdout).Encode(struct {
			ID          string `json:"id"`
			WorkerPID   int    `json:"worker_pid"`
			WorkerStart uint64 `json:"worker_start"`
			Scope       bool   `json:"scope"`
		}{id, a.PID, a.Start, scope})
	}
	_, err := fmt.Fprintf(inv.tool.Stdout, "%s %d\n", id, a.PID)
	return err
}
