package runner

// Starting the command: the first of Run's three parts.

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/proc"
	"github.com/tether-sh/tether/lib/spec"
	"github.com/tether-sh/tether/lib/stop"
)

// start makes the runner a subreaper that catches the forwarded signals,
// starts the command and, once OnStart has recorded it, lets it run. On
// error nothing of the command is left and the runner is as it was.
func start(o Options) (_ *run, err error) {
	r := &run{o: o, sched: schedule(o), stoppedWith: map[int]bool{}}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	if err := checkDir(o.Dir); err != nil {
		return nil, err
	}
	if err := r.becomeSubreaper(); err != nil {
		return nil, err
	}
	r.catch()
	// A command that is recorded, or must get a /proc of its own PID
	// namespace, starts held (gate.go).
	// Children the runner had before (inherited through exec) are not
	// the command's: never stopped, only reaped when they exit.
	inherited := inheritedChildren()
	cmd, h, err := startCommand(o)
	if err != nil {
		return nil, err
	}
	// The reaper owns the child from here; os.Process must never wait
	// for it. Release only drops the pidfd os/exec keeps.
	r.undo = append(r.undo, func() { cmd.Process.Release() })
	r.pid = cmd.Process.Pid
	r.res = Result{Child: proc.ID{PID: r.pid}, Schedule: r.sched}
	if st, err := proc.ReadStat(r.pid); err == nil {
		// Unreaped, the child keeps its PID even as a zombie.
		r.res.Child.Start = st.Start
	}
	if t, ok := h.(*traced); ok {
		// A traced command is released before the reaping loop starts:
		// the loop must never see its stop.
		if err := t.open(r.res.Child, o.OnStart); err != nil {
			return nil, err
		}
	}
	r.reap = startReaper(r.pid, inherited)
	if g, ok := h.(*gated); ok {
		if err := openGate(g, r.reap, r.pid, r.res.Child, o.OnStart); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// schedule is the bounded stop o asks for.
func schedule(o Options) stop.Schedule {
	if len(o.Schedule) > 0 {
		return o.Schedule
	}
	sig := o.Signal
	if sig == 0 {
		sig = unix.SIGTERM
	}
	return stop.Default(sig, o.Grace)
}

func checkDir(dir string) error {
	if dir == "" {
		return nil
	}
	fi, err := os.Stat(dir)
	if err == nil && !fi.IsDir() {
		err = fmt.Errorf("not a directory")
	}
	if err != nil {
		return spec.Errorf(spec.ExitNotRun, "working directory %s: %w", dir, proc.UnwrapPath(err))
	}
	return nil
}

// becomeSubreaper makes the runner child subreaper before the child
// exists, so that nothing it forks can be re-parented past us. The flag is
// per process: close restores it.
func (r *run) becomeSubreaper() error {
	var was int32
	unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&was)), 0, 0, 0)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return spec.Errorf(spec.ExitNotRun, "become child subreaper: %w", err)
	}
	if was == 0 {
		r.undo = append(r.undo, func() { unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) })
	}
	return nil
}

// catch catches the forwarded signals before the child exists: one
// arriving between fork and the wait loop waits in sigs instead of killing
// the runner with its default action.
func (r *run) catch() {
	if r.o.Signals != nil {
		r.sigs = r.o.Signals
		return
	}
	forward := r.o.Forward
	if forward == nil {
		forward = DefaultForward
	}
	c := Catch(Forwardable(forward)...)
	r.undo = append(r.undo, c.Stop)
	r.sigs = c.C()
}

// openGate records the gated command through onStart, if set, and then
// lets it run. On error the command never ran and the gate has been
// reaped: nothing of it is left.
func openGate(g *gated, r *reaper, pid int, child proc.ID, onStart func(proc.ID) error) error {
	var err error
	if onStart != nil {
		if err = onStart(child); err != nil {
			g.shut()
			// Our unreaped child: its PID cannot be a recycled one.
			unix.Kill(pid, unix.SIGKILL)
			err = &spec.ExitError{Code: spec.Code(err, spec.ExitNotRun), Err: err}
		}
	}
	if err == nil {
		err = g.open()
	}
	if err != nil {
		<-r.childStatus
		<-r.done
	}
	return err
}

func orFile(f, def *os.File) *os.File {
	if f != nil {
		return f
	}
	return def
}
