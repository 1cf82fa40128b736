package ledger

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/cmd/internal/sibling"
	"github.com/tether-sh/tether/lib/execution"
	"github.com/tether-sh/tether/lib/handoff"
	"github.com/tether-sh/tether/lib/ledger/location"
	"github.com/tether-sh/tether/lib/spec"
	"github.com/tether-sh/tether/lib/stop"
)

// spawnCmd is `ledger spawn JOB ... -- CMD...`: the restart-safe handoff.
type spawnCmd struct {
	jobClaim
	Scope      string       `default:"auto" enum:"auto,require,never" placeholder:"auto|require|never" help:"Run the worker in a systemd-run --user --scope: auto (when it works: probed once per boot, the answer kept in the store), require (probed every time), never."`
	AckTimeout cli.Duration `default:"10s" placeholder:"D" help:"Wait at most D for the worker to take ownership."`
	Wait       bool         `help:"Wait for the execution to end and exit with its recorded status. A signal (TERM, INT) to the waiting spawn ends only the waiting (exit 128+N): the worker keeps running and finishes the record."`
	Log        string       `type:"path" placeholder:"F" help:"Append the worker's output to F (default: discard)."`
	Lease      cli.Duration `default:"30s" placeholder:"D" help:"PostgreSQL store: the lease of the claim and of the worker, renewed while it runs on the server's clock; recover on another host judges it gone only once it ran out."`
	Cmd        []string     `arg:"" passthrough:"partial" name:"CMD" help:"-- then the command and its arguments. Every argument before CMD that starts with - is a ledger flag, and an unknown one is an error (2); without --, CMD starts at the first argument after JOB that is neither a flag nor its value."`
}

// Run claims JOB with this process as owner and hands it off through
// execution.Spawn, which holds the dispatcher's protocol; here are only
// the flags, the output and the exit status.
func (c *spawnCmd) Run(e *env) error {
	argv, err := commandArgv(c.Cmd)
	if err != nil {
		return err
	}
	if c.AckTimeout.D() <= 0 {
		return spec.Errorf(spec.ExitUsage, "--ack-timeout must be positive, not %v", c.AckTimeout.D())
	}
	// The worker (adopt) stops its payload with the default grace.
	if err := e.checkLease(c.Lease.D(), stop.DefaultGrace); err != nil {
		return err
	}
	adoptPath, err := sibling.Find("adopt")
	if err != nil {
		return notRun(err)
	}
	st, rec, err := claimAsSelf(e, "spawning", c.jobClaim, c.Lease.D())
	if err != nil {
		return err
	}
	defer st.Close()
	id := rec.ID
	so := execution.SpawnOptions{
		Adopt: adoptPath, Argv: argv, Scope: execution.Scope(c.Scope), AckTimeout: c.AckTimeout.D(), Log: c.Log,
	}
	if loc, err := e.location(); err == nil && location.IsPostgres(loc) {
		// Through the environment: a URL's password must not show in ps.
		so.Env = []string{location.EnvVar + "=" + loc}
		so.AdoptFlags = []string{"--lease", c.Lease.D().String()}
	}
	sp, err := execution.Spawn(e.tool.Warnf, st, id, so)
	if err != nil {
		return err
	}
	if err := c.print(e, id, sp.Ack, sp.Worker.Scoped()); err != nil {
		// The worker owns the execution and runs the payload whatever
		// happens here: a caller that retries on this error must know.
		why := strings.TrimPrefix(err.Error(), cli.ErrOutput.Error()+": ")
		return spec.Errorf(spec.ExitSystem, "cannot print the id of %s (%s): %s; the worker (pid %d) runs it: ledger latest %s", c.Job, id, why, sp.Ack.PID, c.Job)
	}
	if !c.Wait {
		return nil
	}
	code, err := execution.WaitSpawned(st, id, sp.Worker)
	if err != nil {
		return err
	}
	if code != spec.ExitOK {
		return exitStatus(code)
	}
	return nil
}

// print writes "ID WORKER_PID" (or a JSON object).
func (c *spawnCmd) print(e *env, id string, a handoff.Ack, scope bool) error {
	if e.g.JSON {
		return json.NewEncoder(e.tool.Stdout).Encode(struct {
			ID          string `json:"id"`
			WorkerPID   int    `json:"worker_pid"`
			WorkerStart uint64 `json:"worker_start"`
			Scope       bool   `json:"scope"`
		}{id, a.PID, a.Start, scope})
	}
	_, err := fmt.Fprintf(e.tool.Stdout, "%s %d\n", id, a.PID)
	return err
}
