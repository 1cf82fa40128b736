package execution

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/handoff"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/proc"
	"github.com/tether-sh/tether/lib/runner"
)

// The dispatcher's side of ledger spawn: a job is claimed, the execution
// fenced and handed to a detached adopt worker (lib/handoff), which
// acknowledges once it owns the execution. Without an acknowledgement the
// claim is failed by compare-and-swap, so that a worker adopting a moment
// later is refused and the payload runs either under its adopter or not at
// all.
//
//	sp, refused, err := execution.SpawnJob(warn, st, execution.SpawnJobOptions{Claim: execution.Claim{Job: "backup"},
//		SpawnOptions: execution.SpawnOptions{Adopt: path, Argv: argv, Scope: execution.ScopeAuto, AckTimeout: 10 * time.Second}})
//	// print sp.ID and sp.Ack.PID; then, for --wait:
//	code, err := execution.WaitSpawned(st, sp.ID, sp.Worker)

// Scope says whether a spawned worker runs inside a systemd user scope.
type Scope string

// The --scope values.
const (
	ScopeAuto    Scope = "auto"    // when systemd-run works here
	ScopeRequire Scope = "require" // or refuse (125) without running anything
	ScopeNever   Scope = "never"   // not even probed
)

// Exit codes of WaitSpawned for records that did not complete or fail.
const (
	ExitAbandoned = exit.NotRun // the payload never started
	ExitUnknown   = 255         // it started; whether it finished is unknown
)

// SpawnOptions says how to hand an execution off.
type SpawnOptions struct {
	Adopt      string   // path of the adopt program
	Argv       []string // the payload
	Scope      Scope
	AckTimeout time.Duration // how long the worker may take to take ownership
	Log        string        // the worker's output; empty: discarded
	// Env is added to the worker's environment: a store that is not a
	// folder (a database URL, which may carry a password) reaches the
	// worker there (ledger.HandoffEnvVar), never on its command line.
	Env []string
	// AdoptFlags are more flags for the worker (--lease D).
	AdoptFlags []string
}

// SpawnJobOptions says what SpawnJob claims and how it hands it off.
type SpawnJobOptions struct {
	SpawnOptions
	Claim Claim
}

// Spawned is a handoff the worker acknowledged.
type Spawned struct {
	ID     string // the execution
	Worker *handoff.Worker
	Ack    handoff.Ack
}

// SpawnJob claims o.Claim.Job with this process as owner (the dispatcher
// is what must stay alive until the worker owns it) and hands it off as
// Spawn does. A refusal (wrapping ledger.ErrRefused, worded "not spawning
// JOB: ...") is returned in refused, unsaid, with nothing recorded; every
// other error is a *exit.Error ready to return (125 when the payload
// did not run, 2 for bad input).
func SpawnJob(warn func(format string, args ...any), st ledger.Ledger, o SpawnJobOptions) (sp *Spawned, refused, err error) {
	owner, err := ledger.LocalOwner(proc.Self())
	if err != nil {
		return nil, nil, &exit.Error{Code: notRunCode(err), Err: err}
	}
	job := o.Claim.Job
	rec, err := st.Claim(job, o.Claim.options(owner))
	if errors.Is(err, ledger.ErrRefused) {
		return nil, fmt.Errorf("not spawning %s: %w", job, err), nil
	}
	if err != nil {
		return nil, nil, &exit.Error{Code: notRunCode(err), Err: err}
	}
	sp, err = Spawn(warn, st, rec.ID, o.SpawnOptions)
	return sp, nil, err
}

// Spawn fences the claimed execution id and hands it to a detached adopt
// worker, returning once the worker owns it. Every error is a
// *exit.Error ready to return (125 when the payload did not run);
// an execution that never reached a worker is recorded as failed.
func Spawn(warn func(format string, args ...any), st ledger.Ledger, id string, o SpawnOptions) (*Spawned, error) {
	scope, err := scopeWorks(warn, st, id, o.Scope)
	if err != nil {
		return nil, err
	}
	if _, err := st.Fence(id); err != nil {
		return nil, giveUp(warn, st, id, "cannot fence: "+err.Error())
	}
	hs := handoff.Spec{Adopt: o.Adopt, ID: id, Argv: o.Argv, Scope: scope, Log: o.Log, Env: o.Env, Flags: o.AdoptFlags}
	// The store checks that the directory is its own and private:
	// another user who could write there could plant the ack.
	hdir, err := st.HandoffDir()
	if err != nil {
		return nil, giveUp(warn, st, id, err.Error())
	}
	if hdir != "" {
		// The store's folder: its worker opens it by its location.
		sweepHandoff(st, hdir)
		hs.Ledger, hs.AckFile = st.Location(), filepath.Join(hdir, id+".ack")
	} else {
		// A store elsewhere has no folder of this host's to hand off
		// through: a private one (0700) serves this spawn alone.
		hdir, err = os.MkdirTemp("", "tether-handoff-")
		if err != nil {
			return nil, giveUp(warn, st, id, "cannot create a handoff directory: "+err.Error())
		}
		defer os.RemoveAll(hdir)
		hs.AckFile = filepath.Join(hdir, id+".ack")
	}
	d := dispatch{warn: warn, st: st, o: o}
	return d.launchWorker(hs)
}

// scopeNote is the boot note holding the probe's answer: "yes", or "no: "
// and why not.
const scopeNote = "scope"

// scopeWorks says whether the worker is to run in a systemd scope. The
// probe takes up to 3 s and its answer holds until the next boot, so with
// --scope auto it runs (and its warning is said) once per boot: later
// spawns read its answer from the store and are silent about it. --scope
// require always probes afresh, so that a user manager mended since is
// seen at once, and notes the answer too.
//
// With auto, a host or session with no user manager to ask (no
// systemd-run, no user bus: cron on a host without systemd) is the
// documented fallback, not a fault, and says nothing: a cron line that
// succeeds must not mail. Only a manager that is there and fails warns.
func scopeWorks(warn func(format string, args ...any), st ledger.Ledger, id string, scope Scope) (bool, error) {
	if scope == ScopeNever {
		return false, nil
	}
	// A store that keeps no boot notes (a database) never has one: every
	// spawn probes.
	if scope == ScopeAuto {
		if v, ok, err := st.BootNote(scopeNote); err == nil && ok {
			return v == "yes", nil
		}
	}
	perr := handoff.Probe(context.Background())
	note := "yes"
	if perr != nil {
		note = "no: " + perr.Error()
	}
	// Unnoted, the next spawn probes again.
	_ = st.SetBootNote(scopeNote, note)
	switch {
	case perr == nil:
		return true, nil
	case scope == ScopeRequire:
		return false, giveUp(warn, st, id, fmt.Sprintf("%v; not running it without one (--scope require)", perr))
	}
	if !errors.Is(perr, handoff.ErrNoManager) {
		warn("warning: %v; running %s without restart-safe cgroup isolation", perr, id)
	}
	return false, nil
}

// giveUp records a dispatch that never reached a worker as failed, then
// refuses (125): the payload did not run.
func giveUp(warn func(format string, args ...any), st ledger.Ledger, id, why string) error {
	if _, err := st.AbortHandoff(id, why); err != nil {
		warn("could not record %s as failed: %v", id, err)
	}
	return &exit.Error{Code: exit.NotRun, Err: fmt.Errorf("%s: %s", id, why)}
}

// dispatch is one Spawn in progress.
type dispatch struct {
	warn func(format string, args ...any)
	st   ledger.Ledger
	o    SpawnOptions
}

// launchWorker launches the worker and waits for its ack, which it then
// removes. With --scope auto, a worker that could not even start inside
// the scope the probe promised (it exited without adopting) is launched
// once more without one.
func (d dispatch) launchWorker(s handoff.Spec) (*Spawned, error) {
	defer os.Remove(s.AckFile)
	// The worker, and through it the payload, inherits the signals
	// spawn's caller ignored.
	runner.KeepIgnored()
	for {
		w, err := handoff.Launch(s)
		if err != nil {
			return nil, giveUp(d.warn, d.st, s.ID, "cannot start worker: "+err.Error())
		}
		ctx, cancel := context.WithTimeout(context.Background(), d.o.AckTimeout)
		a, err := w.WaitAck(ctx)
		cancel()
		if err == nil {
			return &Spawned{ID: s.ID, Worker: w, Ack: a}, nil
		}
		if s.Scope && d.o.Scope == ScopeAuto && errors.Is(err, handoff.ErrWorkerExited) {
			// It exited, so it can no longer adopt; if it never did, the
			// claim is still fenced and waiting.
			if r, gerr := d.st.Get(s.ID); gerr == nil && r.Status == ledger.Claimed && r.Fenced {
				d.warn("warning: the worker of %s did not start inside a systemd scope (%v); running it without restart-safe cgroup isolation", s.ID, err)
				s.Scope = false
				continue
			}
		}
		return d.noAck(s.ID, w, err)
	}
}

// noAck settles a handoff whose worker did not acknowledge: the record is
// failed by compare-and-swap, so a worker that adopts a moment later is
// refused and never runs the payload. If the CAS loses, the worker did
// adopt: if it runs (or ran) the payload, the handoff succeeded after all
// and the record names the worker; otherwise the record tells the truth
// about what happened, and the handoff failed.
func (d dispatch) noAck(id string, w *handoff.Worker, why error) (*Spawned, error) {
	msg := why.Error()
	switch {
	case errors.Is(why, handoff.ErrAckTimeout):
		msg = fmt.Sprintf("no ownership acknowledgement within %v", d.o.AckTimeout)
	case errors.Is(why, handoff.ErrWorkerExited) && w.Scoped():
		msg += fmt.Sprintf(", started by %s --user --scope", handoff.SystemdRun)
	}
	_, ferr := d.st.AbortHandoff(id, msg)
	if ferr == nil {
		// The worker can no longer adopt; make sure it is not left waiting.
		w.Stop(time.Second)
		return nil, &exit.Error{Code: exit.NotRun, Err: fmt.Errorf("%s: %s", id, msg)}
	}
	r, gerr := d.st.Get(id)
	if gerr != nil {
		return nil, &exit.Error{Code: exit.System, Err: fmt.Errorf("%s: %s, and its record cannot be read: %w", id, msg, gerr)}
	}
	ranPayload := r.Status == ledger.Running || (r.Status.Terminal() && r.Child.PID != 0)
	if r.Owner.PID == w.PID() && ranPayload {
		d.warn("%s: %s, but worker %d adopted it", id, msg, w.PID())
		// Its ack is on its way: give it a moment, so that it is removed
		// rather than left behind.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		w.WaitAck(ctx)
		cancel()
		return &Spawned{ID: id, Worker: w, Ack: handoff.Ack{ExecutionID: id, PID: r.Owner.PID, Start: r.Owner.Start}}, nil
	}
	state := r.State()
	if r.Error != "" && r.Status.Terminal() {
		state += ": " + r.Error
	}
	return nil, &exit.Error{Code: exit.NotRun, Err: fmt.Errorf("%s: %s; the execution is %s", id, msg, state)}
}

// sweepHandoff removes handoff files nobody will read any more, left by a
// spawn killed while it waited for its ack: ack files over a minute old
// whose execution is no longer claimed (or no longer exists), and
// temporary files over a minute old. A waiting spawn reads its ack within
// milliseconds of its writing, so a minute is plenty.
func sweepHandoff(st ledger.Ledger, dir string) {
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

// WaitSpawned waits until execution id, handed to worker w, is terminal
// and returns its recorded exit code: 0 for completed, the payload's
// status for failed with a non-zero one. Every other ending is an error
// carrying its exit code: 1 for failed without a status, ExitAbandoned,
// ExitUnknown. It judges execution id only, however many newer ones its
// job has. It catches no signal: TERM or INT end the waiter as they end
// any waiter (128+N), and the worker, in a session of its own, is not
// touched.
func WaitSpawned(st ledger.Ledger, id string, w *handoff.Worker) (int, error) {
	<-w.Exited()
	r, err := st.Get(id)
	if err != nil {
		return 0, err
	}
	if r.Attempt > 0 && r.Attempt < r.Attempts {
		// The worker retried (adopt --retry): its last attempt is the
		// result.
		if r, err = LastAttempt(st, r); err != nil {
			return 0, err
		}
		id = r.ID
	}
	if !r.Status.Terminal() {
		// The worker died without finishing: wait for its payload and
		// whatever is left of the payload's process group (recover leaves
		// the execution alone while any of it runs), then judge the
		// execution as recover would.
		if r.Child.PID != 0 {
			if err := proc.WaitGroupGone(context.Background(), r.Child); err != nil {
				return 0, fmt.Errorf("waiting for the payload of %s: %w", id, err)
			}
		}
		if r, err = st.RecoverOne(id); err != nil {
			return 0, err
		}
	}
	switch r.Status {
	case ledger.Completed:
		return exit.OK, nil
	case ledger.Failed:
		if r.ExitCode != nil && *r.ExitCode != 0 {
			return *r.ExitCode, nil
		}
		return 0, &exit.Error{Code: exit.Refused, Err: fmt.Errorf("%s failed: %s", id, r.Error)}
	case ledger.Abandoned:
		return 0, &exit.Error{Code: ExitAbandoned, Err: fmt.Errorf("%s ended abandoned: the payload never started", id)}
	case ledger.Unknown:
		return 0, &exit.Error{Code: ExitUnknown, Err: fmt.Errorf("%s ended unknown: %s", id, r.Error)}
	}
	return 0, &exit.Error{Code: ExitUnknown, Err: fmt.Errorf("%s is still %s", id, r.State())}
}

// LastAttempt is the newest attempt of r's run (ledger run or spawn
// --retry): the execution of r's job with r's owner (the runner, or
// spawn's worker, that made every attempt), instant and number of
// attempts whose attempt number is the highest; r itself when none is
// higher.
func LastAttempt(st ledger.Ledger, r ledger.Record) (ledger.Record, error) {
	last := r
	err := st.Each(ledger.Filter{Job: r.Job}, func(x ledger.Record) error {
		if x.Attempts == r.Attempts && x.Owner == r.Owner && x.Instant.Equal(r.Instant) && x.Attempt > last.Attempt {
			last = x
		}
		return nil
	})
	return last, err
}
