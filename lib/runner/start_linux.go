package runner

// Starting the command: the first of Run's three parts.

import (
	"fmt"
	"os"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/proc"
	"github.com/tether-sh/tether/lib/stop"
	"github.com/tether-sh/tether/lib/syntax"
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
	if r.tty = foregroundTerminal(orFile(o.Stdin, os.Stdin)); r.tty != nil {
		// Should the command fail to start, or once it has ended.
		r.undo = append(r.undo, r.tty.takeBack)
	}
	// A command that is recorded, or must get a /proc of its own PID
	// namespace, starts held (gate_linux.go).
	// Children the runner had before (inherited through exec) are not
	// the command's: never stopped, only reaped when they exit.
	inherited := inheritedChildren()
	pid, h, err := startCommand(o, r.tty)
	if err != nil {
		return nil, err
	}
	// The reaper owns the child from here (forkExec: no os.Process).
	r.pid = pid
	if r.tty != nil {
		r.tty.child = r.pid
	}
	r.res = Result{Child: proc.ID{PID: r.pid}, Schedule: r.sched}
	if st, err := proc.ReadStat(r.pid); err == nil {
		// Unreaped, the child keeps its PID even as a zombie.
		r.res.Child.Start = st.Start
	}
	// Each way of holding starts the reaping loop at its own moment.
	reap := func() { r.reap = startReaper(r.pid, inherited) }
	if err := h.letRun(r, r.stoppable(o.OnStart), reap); err != nil {
		return nil, err
	}
	if r.tty != nil {
		go r.tty.jobControl(r.pid)
	}
	return r, nil
}

// heldStops are the signals that end a run whose command is still held:
// what a caller sends to stop it. The others wait to be forwarded.
var heldStops = []unix.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGHUP}

// stoppable wraps onStart so that a stop signal arriving while it runs
// (a claim waiting for the store's lock, up to --lock-timeout) ends the
// start at once, with 128+N: the command has run no instruction, so there
// is nothing to forward the signal to; releasing it only to be signalled
// would run it. HeldStop tells onStart to give up, and its answer is
// waited for: a claim waiting for the lock gives up at once, one already
// committing is done in milliseconds, and the caller then knows which it
// was. Other signals caught meanwhile are kept for the wait loop to
// forward.
func (r *run) stoppable(onStart func(proc.ID) error) func(proc.ID) error {
	if onStart == nil {
		return nil
	}
	return func(child proc.ID) error {
		done := make(chan error, 1)
		go func() { done <- onStart(child) }()
		stopped := func(sig unix.Signal) error {
			if r.o.HeldStop != nil {
				close(r.o.HeldStop)
			}
			<-done
			return exit.Errorf(exit.ForSignal(sig), "%s: %w: signal %s arrived while it waited to be recorded", syntax.EscapeControlChars(r.o.Argv[0]), ErrStoppedHeld, syntax.SignalName(sig))
		}
		for {
			select {
			case err := <-done:
				// A stop already waiting when the commit returned came
				// while it waited (select picks at random among ready
				// cases): it wins, so that the command is not released.
				if sig, ok := r.heldStopWaiting(); ok && err == nil {
					done <- err
					return stopped(sig)
				}
				return err
			case s := <-r.sigs:
				sig := s.(unix.Signal)
				if !slices.Contains(heldStops, sig) {
					r.pending = append(r.pending, sig)
					continue
				}
				return stopped(sig)
			}
		}
	}
}

// heldStopWaiting takes the signals already caught without waiting: the
// first stop among them is returned, the others kept to be forwarded.
func (r *run) heldStopWaiting() (unix.Signal, bool) {
	for {
		select {
		case s := <-r.sigs:
			sig := s.(unix.Signal)
			if slices.Contains(heldStops, sig) {
				return sig, true
			}
			r.pending = append(r.pending, sig)
		default:
			return 0, false
		}
	}
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
		return exit.Errorf(exit.NotRun, "working directory %s: %w", dir, proc.UnwrapPath(err))
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
		return exit.Errorf(exit.NotRun, "become child subreaper: %w", err)
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
	SurviveEPIPE()
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

func orFile(f, def *os.File) *os.File {
	if f != nil {
		return f
	}
	return def
}
