package runner

import (
	"context"
	"os"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/proc"
	"github.com/tether-sh/tether/lib/stop"
)

var running atomic.Bool

// Run runs o.Argv to completion as described in the package comment.
//
// An error means the command did not run: it is a *exit.Error with
// code 127 (not found), 126 (not executable) or 125 (anything else, e.g.
// a bad Dir or ErrBusy). Once the command has started, Run always returns
// a Result and a nil error. ctx being done stops the command like a
// deadline; the leftover cleanup that follows is still bounded by the
// schedule but not cut short by ctx. Forwarded signals that arrive once
// the command has ended are absorbed: the cleanup is bounded anyway, and
// the runner must not die with its leftovers unreaped.
func Run(ctx context.Context, o Options) (Result, error) {
	if len(o.Argv) == 0 {
		return Result{}, exit.Errorf(exit.NotRun, "no command given")
	}
	if o.Argv[0] == "" {
		// A command named by an empty word: a shell finds none (127).
		return Result{}, exit.Errorf(exit.NotFound, `"": command not found`)
	}
	if !running.CompareAndSwap(false, true) {
		return Result{}, exit.Errorf(exit.NotRun, "%w", ErrBusy)
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
	// pending are the signals caught while the command was held: the wait
	// loop forwards them first.
	pending []unix.Signal
	// tty is the terminal the command was given, nil if none.
	tty *terminal
}

// close undoes what start did to the runner's process.
func (r *run) close() {
	for i := len(r.undo) - 1; i >= 0; i-- {
		r.undo[i]()
	}
}

// waitLoop forwards the caught signals to the command's group until the
// command ends, and stops the group boundedly once the deadline passes,
// ctx is done or Stop delivers: the first of them, once, unless the
// command has ended on its own by then. exited is false when the command
// outlived even KILL.
func (r *run) waitLoop(ctx context.Context) (ws syscall.WaitStatus, exited bool) {
	var deadline <-chan time.Time
	if r.o.Deadline > 0 {
		tm := time.NewTimer(r.o.Deadline)
		defer tm.Stop()
		deadline = tm.C
	}
	done, stopNow := ctx.Done(), r.o.Stop
	for _, s := range r.pending {
		unix.Kill(-r.pid, s)
	}
	for {
		sched := r.sched
		ended := r.reap.childStatus
		select {
		case ws := <-ended:
			return r.exited(ws), true
		case s := <-r.sigs:
			// The child is unreaped, so its PID, hence its group id, is
			// still ours: the group cannot be a recycled one.
			unix.Kill(-r.pid, s.(unix.Signal))
			continue
		case <-deadline:
			if r.endedOnItsOwn() {
				return r.exited(<-ended), true
			}
			r.res.DeadlineHit = true
		case <-done:
			if r.endedOnItsOwn() {
				return r.exited(<-ended), true
			}
			r.res.Canceled = true
		case sig := <-stopNow:
			if r.endedOnItsOwn() {
				return r.exited(<-ended), true
			}
			r.res.Stopped = true
			sched = withFirst(sched, sig)
		}
		deadline, done, stopNow = nil, nil, nil
		if !r.stopCommand(sched) {
			return 0, false
		}
	}
}

// exited is the command's status ws, once it has ended.
func (r *run) exited(ws syscall.WaitStatus) syscall.WaitStatus {
	if r.tty != nil {
		// Before the leftovers are stopped: they are not the command, and
		// the terminal is the caller's again.
		r.tty.takeBack()
	}
	return ws
}

// endedOnItsOwn reports whether the command has exited already, its
// status not yet passed on by the reaper (which takes a moment, and select
// picks at random among ready cases): then it ran to its own end, nothing
// is to be stopped, and its status, which comes, is what to wait for. The
// look leaves the zombie to the reaper (waitid WNOWAIT); ECHILD means the
// reaper has it.
func (r *run) endedOnItsOwn() bool {
	if len(r.reap.childStatus) > 0 {
		return true
	}
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, r.pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT|unix.WALL, nil)
	return err == nil && info.Signo == int32(unix.SIGCHLD) || err == unix.ECHILD
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
		res.ExitCode = exit.NotRun
		if res.DeadlineHit {
			res.ExitCode = exit.Deadline
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
	res.ExitCode = exit.ForWait(ws)
	if res.DeadlineHit {
		res.ExitCode = exit.Deadline
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
