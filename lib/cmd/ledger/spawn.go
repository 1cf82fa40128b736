package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/tether-sh/tether/lib/spec"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/handoff"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/proc"
)

// spawnCmd is `ledger spawn JOB ... -- CMD...`: the restart-safe handoff.
type spawnCmd struct {
	jobClaim
	Scope      string       `default:"auto" enum:"auto,require,never" placeholder:"auto|require|never" help:"Run the worker in a systemd-run --user --scope: auto (when it works), require, never."`
	AckTimeout cli.Duration `default:"10s" placeholder:"D" help:"Wait at most D for the worker to take ownership."`
	Wait       bool         `help:"Wait for the execution to end and exit with its recorded status. A signal (TERM, INT) to the waiting spawn ends only the waiting (exit 128+N): the worker keeps running and finishes the record."`
	Log        string       `type:"path" placeholder:"F" help:"Append the worker's output to F (default: discard)."`
	Cmd        []string     `arg:"" passthrough:"partial" name:"CMD" help:"-- then the command and its arguments. Every argument before CMD that starts with - is a ledger flag, and an unknown one is an error (2); without --, CMD starts at the first argument after JOB that is neither a flag nor its value."`
}

// Exit codes of spawn --wait for records that did not complete or fail.
const (
	exitAbandoned = spec.ExitNotRun // the payload never started
	exitUnknown   = 255             // it started; whether it finished is unknown
)

func (c *spawnCmd) Run(e *env) error {
	argv, err := commandArgv(c.Cmd)
	if err != nil {
		return err
	}
	if c.AckTimeout.D() <= 0 {
		return spec.Errorf(spec.ExitUsage, "--ack-timeout must be positive, not %v", c.AckTimeout.D())
	}
	adoptPath, err := findAdopt()
	if err != nil {
		return notRun(err)
	}
	st, rec, err := claimAsSelf(e, "spawning", c.jobClaim)
	if err != nil {
		return err
	}
	id := rec.ID

	scope := false
	if c.Scope != "never" {
		perr := handoff.Probe(context.Background())
		switch {
		case perr == nil:
			scope = true
		case c.Scope == "require":
			return giveUp(e, st, id, fmt.Sprintf("%v; not running it without one (--scope require)", perr))
		default:
			e.tool.Warnf("warning: %v; running %s without restart-safe cgroup isolation", perr, id)
		}
	}
	if _, err := st.Fence(id); err != nil {
		return giveUp(e, st, id, "cannot fence: "+err.Error())
	}
	hdir, err := st.HandoffDir()
	if err != nil {
		return giveUp(e, st, id, err.Error())
	}
	sweepHandoff(st, hdir)
	w, a, err := c.handOff(e, st, handoff.Spec{
		Adopt: adoptPath, Ledger: st.Dir(), ID: id, AckFile: filepath.Join(hdir, id+".ack"),
		Argv: argv, Scope: scope, Log: c.Log,
	})
	if err != nil {
		return err
	}
	if err := c.print(e, id, a, w.Scoped()); err != nil {
		// The worker owns the execution and runs the payload whatever
		// happens here: a caller that retries on this error must know.
		why := strings.TrimPrefix(err.Error(), cli.ErrOutput.Error()+": ")
		return spec.Errorf(spec.ExitSystem, "cannot print the id of %s (%s): %s; the worker (pid %d) runs it: ledger latest %s", c.Job, id, why, a.PID, c.Job)
	}
	if !c.Wait {
		return nil
	}
	return c.waitEnd(e, st, id, w)
}

// giveUp records a dispatch that never reached a worker as failed, then
// refuses (125): the payload did not run.
func giveUp(e *env, st *ledger.Store, id, why string) error {
	if _, err := st.AbortHandoff(id, why); err != nil {
		e.tool.Warnf("could not record %s as failed: %v", id, err)
	}
	return &spec.ExitError{Code: spec.ExitNotRun, Err: fmt.Errorf("%s: %s", id, why)}
}

// handOff launches the worker and waits for its ack, which it then
// removes. With --scope auto, a worker that could not even start inside
// the scope the probe promised (it exited without adopting) is launched
// once more without one.
func (c *spawnCmd) handOff(e *env, st *ledger.Store, s handoff.Spec) (*handoff.Worker, handoff.Ack, error) {
	defer os.Remove(s.AckFile)
	for {
		w, err := handoff.Launch(s)
		if err != nil {
			return nil, handoff.Ack{}, giveUp(e, st, s.ID, "cannot start worker: "+err.Error())
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.AckTimeout.D())
		a, err := w.WaitAck(ctx)
		cancel()
		if err == nil {
			return w, a, nil
		}
		if s.Scope && c.Scope == "auto" && errors.Is(err, handoff.ErrWorkerExited) {
			// It exited, so it can no longer adopt; if it never did, the
			// claim is still fenced and waiting.
			if r, gerr := st.Get(s.ID); gerr == nil && r.Status == ledger.Claimed && r.Fenced {
				e.tool.Warnf("warning: the worker of %s did not start inside a systemd scope (%v); running it without restart-safe cgroup isolation", s.ID, err)
				s.Scope = false
				continue
			}
		}
		return c.noAck(e, st, s.ID, w, err)
	}
}

// noAck settles a handoff whose worker did not acknowledge: the record is
// failed by compare-and-swap, so a worker that adopts a moment later is
// refused and never runs the payload. If the CAS loses, the worker did
// adopt: if it runs (or ran) the payload, the handoff succeeded after all
// and the record names the worker; otherwise the record tells the truth
// about what happened, and the handoff failed.
func (c *spawnCmd) noAck(e *env, st *ledger.Store, id string, w *handoff.Worker, why error) (*handoff.Worker, handoff.Ack, error) {
	msg := why.Error()
	switch {
	case errors.Is(why, handoff.ErrAckTimeout):
		msg = fmt.Sprintf("no ownership acknowledgement within %v", c.AckTimeout.D())
	case errors.Is(why, handoff.ErrWorkerExited) && w.Scoped():
		msg += fmt.Sprintf(", started by %s --user --scope", handoff.SystemdRun)
	}
	_, ferr := st.AbortHandoff(id, msg)
	if ferr == nil {
		// The worker can no longer adopt; make sure it is not left waiting.
		w.Stop(time.Second)
		return nil, handoff.Ack{}, &spec.ExitError{Code: spec.ExitNotRun, Err: fmt.Errorf("%s: %s", id, msg)}
	}
	r, gerr := st.Get(id)
	if gerr != nil {
		return nil, handoff.Ack{}, &spec.ExitError{Code: spec.ExitSystem, Err: fmt.Errorf("%s: %s, and its record cannot be read: %w", id, msg, gerr)}
	}
	ranPayload := r.Status == ledger.Running || (r.Status.Terminal() && r.Child.PID != 0)
	if r.Owner.PID == w.PID() && ranPayload {
		e.tool.Warnf("%s: %s, but worker %d adopted it", id, msg, w.PID())
		// Its ack is on its way: give it a moment, so that it is removed
		// rather than left behind.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		w.WaitAck(ctx)
		cancel()
		return w, handoff.Ack{ExecutionID: id, PID: r.Owner.PID, Start: r.Owner.Start}, nil
	}
	state := r.State()
	if r.Error != "" && r.Status.Terminal() {
		state += ": " + r.Error
	}
	return nil, handoff.Ack{}, &spec.ExitError{Code: spec.ExitNotRun, Err: fmt.Errorf("%s: %s; the execution is %s", id, msg, state)}
}

// sweepHandoff removes handoff files nobody will read any more, left by a
// spawn killed while it waited for its ack: ack files over a minute old
// whose execution is no longer claimed (or no longer exists), and
// temporary files over a minute old. A waiting spawn reads its ack within
// milliseconds of its writing, so a minute is plenty.
func sweepHandoff(st *ledger.Store, dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	cutoff := time.Now().Add(-time.Minute)
	for _, ent := range ents {
		info, err := ent.Info()
		if err != nil || !info.ModTime().Before(cutoff) {
			continue
		}
		name := ent.Name()
		p := filepath.Join(dir, name)
		if strings.HasPrefix(name, ".") {
			os.Remove(p)
			continue
		}
		id, ok := strings.CutSuffix(name, ".ack")
		if !ok {
			continue
		}
		r, err := st.Get(id)
		if errors.Is(err, ledger.ErrNotFound) || errors.Is(err, ledger.ErrBadID) || (err == nil && r.Status != ledger.Claimed) {
			os.Remove(p)
		}
	}
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

// waitEnd waits until the execution is terminal and turns its status into
// an exit code: the recorded exit code, 125 for abandoned, 255 for unknown.
// It judges execution id only, however many newer ones its job has. The
// waiter catches no signal: TERM or INT end it as they end any waiter
// (128+N), and the worker, in a session of its own, is not touched.
func (c *spawnCmd) waitEnd(e *env, st *ledger.Store, id string, w *handoff.Worker) error {
	<-w.Exited()
	r, err := st.Get(id)
	if err != nil {
		return err
	}
	if !r.Status.Terminal() {
		// The worker died without finishing: wait for its payload and
		// whatever is left of the payload's process group (recover leaves
		// the execution alone while any of it runs), then judge the
		// execution as recover would.
		if r.Child.PID != 0 {
			if err := proc.WaitGroupGone(context.Background(), r.Child); err != nil {
				return fmt.Errorf("waiting for the payload of %s: %w", id, err)
			}
		}
		if r, err = st.RecoverOne(id); err != nil {
			return err
		}
	}
	switch r.Status {
	case ledger.Completed:
		return nil
	case ledger.Failed:
		if r.ExitCode != nil && *r.ExitCode != 0 {
			return exitStatus(*r.ExitCode)
		}
		return &spec.ExitError{Code: spec.ExitRefused, Err: fmt.Errorf("%s failed: %s", id, r.Error)}
	case ledger.Abandoned:
		return &spec.ExitError{Code: exitAbandoned, Err: fmt.Errorf("%s ended abandoned: the payload never started", id)}
	case ledger.Unknown:
		return &spec.ExitError{Code: exitUnknown, Err: fmt.Errorf("%s ended unknown: %s", id, r.Error)}
	}
	return &spec.ExitError{Code: exitUnknown, Err: fmt.Errorf("%s is still %s", id, r.State())}
}

// findAdopt locates the adopt program: beside this executable (as
// install.sh puts them), else on PATH.
func findAdopt() (string, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "adopt")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := exec.LookPath("adopt")
	if err != nil {
		return "", errors.New("cannot find the adopt program beside ledger or on PATH")
	}
	return p, nil
}
