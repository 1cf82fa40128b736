package runner

import (
	"context"
	"errors"
	"os"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tether-sh/tether/lib/spec"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/proc"
	"github.com/tether-sh/tether/lib/stop"
)

// ErrBusy is returned when Run is called while another Run is running in
// the same process: there can be only one owner of wait4.
var ErrBusy = errors.New("another command is already running in this process")

// Options says what to run and how to stop it.
type Options struct {
	// Argv is the command and its arguments; Argv[0] is looked up in PATH
	// when it contains no slash.
	Argv []string
	// Env is the command's environment; nil inherits the runner's.
	Env []string
	// Dir is the command's working directory; empty inherits the runner's.
	Dir string
	// Stdin, Stdout and Stderr are handed to the command as they are; nil
	// inherits the runner's own. They are files, not io.Readers, so that no
	// copying goroutine needs exec.Cmd.Wait to finish.
	Stdin, Stdout, Stderr *os.File

	// Signal is the first signal of every bounded stop (deadline and
	// leftovers); zero means TERM.
	Signal unix.Signal
	// Grace is the wait after Signal before KILL. Zero means KILL at once;
	// tools pass their --grace (default stop.DefaultGrace).
	Grace time.Duration
	// Schedule, when set, replaces Signal and Grace.
	Schedule stop.Schedule
	// Deadline, when positive, stops the command's process group once it
	// has run that long; the result is then 124.
	Deadline time.Duration
	// Forward lists the signals forwarded to the command's process group;
	// nil means DefaultForward. A signal the runner was started with
	// ignored (nohup) is neither caught nor forwarded.
	Forward []os.Signal

	// PIDNamespace runs the command as init of a new PID namespace
	// (CLONE_NEWPID; needs CAP_SYS_ADMIN). When the command ends — or the
	// runner is SIGKILLed, which kills the command through its parent-death
	// signal — the kernel kills everything left in the namespace, so
	// nothing survives even the runner. As a namespace's init, the command
	// receives only the signals it has handlers for (and KILL): a forwarded
	// TERM that it does not handle is ignored, and stops escalate to KILL.
	PIDNamespace bool

	// Signals, when set, replaces Forward: the channel of a Catcher the
	// caller started earlier — before claiming the work Run will do — so
	// that a signal arriving before the command exists is not lost nor
	// fatal, but forwarded to the command as soon as it runs. The caller
	// stops the Catcher.
	Signals chan os.Signal

	// Stop, when set, stops the command boundedly the moment it delivers a
	// signal, as the deadline and ctx do: its process group (and the
	// command, should it have left the group) with the schedule, the
	// signal received replacing the schedule's first (zero, or a closed
	// channel, keeps it). Result.Stopped then reports it; ExitCode is the
	// command's own status. Only the first of the deadline, ctx and Stop
	// stops the command.
	Stop <-chan unix.Signal

	// OnStart, when set, is called once with the command's identity while
	// the command is held (gate.go): its process exists, its PID@START and
	// process group are final, but not one instruction of the command has
	// run. The command runs only once OnStart returns nil (ledger run and
	// adopt record it durably there); an error keeps it from ever running,
	// and Run returns that error with code 125 (or the error's own
	// *spec.ExitError code).
	OnStart func(child proc.ID) error
}

// Result is what happened to the command and what it left behind.
type Result struct {
	// Child is the command's process, PID@START.
	Child proc.ID
	// Status is the command's raw wait status; ExitCode its exit code per
	// SPEC §1: its exit status, 128+N when it died of signal N, 124 when
	// the deadline stopped it.
	Status   syscall.WaitStatus
	ExitCode int
	// Signaled reports that the command died of a signal.
	Signaled bool
	// DeadlineHit reports that Options.Deadline stopped the command;
	// Canceled that ctx did (ExitCode is then the command's own status).
	DeadlineHit bool
	Canceled    bool
	// Stopped reports that Options.Stop stopped the command.
	Stopped bool
	// StopIgnored, when the command was stopped (deadline, ctx or Stop)
	// and its group outlived the first signal, is the signal it ignored:
	// the one sent just before KILL. Zero when no KILL was needed.
	StopIgnored unix.Signal
	// Leftovers are the processes the command left behind when it ended
	// (zombies included), every one stopped and reaped unless listed in
	// Survivors. Sorted by PID; START is 0 for one reaped before it was seen.
	Leftovers []proc.ID
	// Killed are the leftovers that needed KILL.
	Killed []proc.ID
	// Survivors outlived even KILL (or the command did): still there when
	// Run returned.
	Survivors []proc.ID
	// Schedule is the bounded stop that was used.
	Schedule stop.Schedule
	// Cleanup is the time from the command's exit to Run's return: what
	// stopping and reaping the leftovers cost.
	Cleanup time.Duration
}

// Code is the runner's exit code: 125 when something survived KILL (the
// message must say so), else ExitCode.
func (r Result) Code() int {
	if len(r.Survivors) > 0 {
		return spec.ExitNotRun
	}
	return r.ExitCode
}

var running atomic.Bool

// Run runs o.Argv to completion as described in the package comment.
//
// An error means the command did not run: it is a *spec.ExitError with
// code 127 (not found), 126 (not executable) or 125 (anything else, e.g.
// a bad Dir or ErrBusy). Once the command has started, Run always returns
// a Result and a nil error. ctx being done stops the command like a
// deadline; the leftover cleanup that follows is still bounded by the
// schedule but not cut short by ctx. Forwarded signals that arrive once
// the command has ended are absorbed: the cleanup is bounded anyway, and
// the runner must not die with its leftovers unreaped.
func Run(ctx context.Context, o Options) (Result, error) {
	if len(o.Argv) == 0 || o.Argv[0] == "" {
		return Result{}, spec.Errorf(spec.ExitNotRun, "no command given")
	}
	if !running.CompareAndSwap(false, true) {
		return Result{}, spec.Errorf(spec.ExitNotRun, "%w", ErrBusy)
	}
	defer running.Store(false)
	r, err := start(o)
	if err != nil {
		return Result{}, err
	}
	defer r.close()
	ws, exited := r.waitLoop(ctx)
	return r.finish(ws, exited), nil
}

// run is one Run, from the command's start to Run's return.
type run struct {
	o     Options
	sched stop.Schedule
	sigs  <-chan os.Signal // forwarded to the command's group
	pid   int              // the command's PID, also its process group id
	reap  *reaper
	res   Result
	// stoppedWith are the members of the command's group stopped with it
	// (deadline, ctx, Stop): part of the command, not leftovers, even if
	// reaped after it.
	stoppedWith map[int]bool
	undo        []func() // run by close, last first
}

// close undoes what start did to the runner's process.
func (r *run) close() {
	for i := len(r.undo) - 1; i >= 0; i-- {
		r.undo[i]()
	}
}

// waitLoop forwards the caught signals to the command's group until the
// command ends, and stops the group boundedly once the deadline passes,
// ctx is done or Stop delivers: the first of them, once. exited is false
// when the command outlived even KILL.
func (r *run) waitLoop(ctx context.Context) (ws syscall.WaitStatus, exited bool) {
	var deadline <-chan time.Time
	if r.o.Deadline > 0 {
		tm := time.NewTimer(r.o.Deadline)
		defer tm.Stop()
		deadline = tm.C
	}
	done, stopNow := ctx.Done(), r.o.Stop
	for {
		sched := r.sched
		select {
		case ws := <-r.reap.childStatus:
			return ws, true
		case s := <-r.sigs:
			// The child is unreaped, so its PID, hence its group id, is
			// still ours: the group cannot be a recycled one.
			unix.Kill(-r.pid, s.(unix.Signal))
			continue
		case <-deadline:
			r.res.DeadlineHit = true
		case <-done:
			r.res.Canceled = true
		case sig := <-stopNow:
			r.res.Stopped = true
			sched = withFirst(sched, sig)
		}
		deadline, done, stopNow = nil, nil, nil
		if !r.stopCommand(sched) {
			return 0, false
		}
	}
}

// withFirst returns sched starting with sig instead of its own first
// signal; as it is when sig is zero or sched starts with KILL, which no
// signal softens.
func withFirst(sched stop.Schedule, sig unix.Signal) stop.Schedule {
	if sig == 0 || len(sched) == 0 || sched[0].Signal == unix.SIGKILL {
		return sched
	}
	sched = slices.Clone(sched)
	sched[0].Signal = sig
	return sched
}

// finish completes the result once the command has ended (exited) or
// outlived KILL: it stops and reaps what the command left behind.
func (r *run) finish(ws syscall.WaitStatus, exited bool) Result {
	res := r.res
	if !exited {
		// The command outlived KILL: nothing more can be done for it.
		res.ExitCode = spec.ExitNotRun
		if res.DeadlineHit {
			res.ExitCode = spec.ExitDeadline
		}
		res.Survivors = append(res.Survivors, res.Child)
		tr := stop.NewDescendants("", &r.reap.hold)
		live, _ := tr.Sweep()
		tr.Close()
		for _, id := range live {
			if id.PID != r.pid {
				res.Survivors = append(res.Survivors, id)
			}
		}
		return res
	}
	res.Status = ws
	res.Signaled = ws.Signaled()
	res.ExitCode = spec.ExitStatus(ws)
	if res.DeadlineHit {
		res.ExitCode = spec.ExitDeadline
	}
	exitedAt := time.Now()
	cleanup(r.reap, r.sched, r.stoppedWith, &res)
	res.Cleanup = time.Since(exitedAt)
	return res
}

// stopCommand stops the command's process group (and the command, should
// it have left the group) with sched. It reports whether the command is
// gone.
func (r *run) stopCommand(sched stop.Schedule) bool {
	if ids, err := proc.GroupMembers(r.pid); err == nil {
		for _, id := range ids {
			r.stoppedWith[id.PID] = true
		}
	}
	targets := []stop.Target{&stop.Group{PGID: r.pid}}
	if p, err := stop.NewProcess(r.res.Child, ""); err == nil {
		defer p.Close()
		targets = append(targets, p)
	}
	out := stop.Run(context.Background(), targets, sched)
	for _, o := range out {
		if killed, last := o.Killed(); killed {
			r.res.StopIgnored = last
			break
		}
	}
	return out[len(out)-1].Gone
}
