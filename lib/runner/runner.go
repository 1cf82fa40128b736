// Package runner runs a command as a child the way every tether runner
// does (reap, ledger run): in its own process group, with the runner as
// child subreaper, signals forwarded to the group, an optional deadline,
// and — once the command has ended — every process it left behind stopped
// with the bounded schedule and reaped.
//
// Synopsis:
//
//	res, err := runner.Run(ctx, runner.Options{
//		Argv:     []string{"backup.sh", "--full"},
//		Grace:    5 * time.Second,
//		Deadline: time.Hour,
//		OnStart:  func(child proc.ID) { record(child) },
//	})
//	if err != nil { // the command never ran: 125, 126 or 127
//		return tool.Fail(err, spec.ExitNotRun)
//	}
//	report(res.Leftovers, res.Survivors)
//	return res.Code()
//
// One owner of wait4. While Run runs it is the only code in the process that
// may wait for children: it starts the command with os/exec but never calls
// exec.Cmd.Wait; one goroutine calls wait4(-1) in a loop, records the
// command's status and reaps every orphan re-parented to the runner. Any
// other child started meanwhile (exec.Cmd.Run elsewhere in the process)
// would be reaped by that loop and its own Wait would fail. Only one Run may
// run at a time in a process.
package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/tether-sh/tether/lib/spec"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/proc"
	"github.com/tether-sh/tether/lib/stop"
)

// DefaultForward are the signals a runner forwards to the command's group.
var DefaultForward = []os.Signal{
	unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2,
}

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

	// Signals, when set, replaces Forward: a channel the caller registered
	// with signal.Notify earlier — before claiming the work Run will do —
	// so that a signal arriving before the command exists is not lost nor
	// fatal, but forwarded to the command as soon as it runs. The caller
	// stops the registration.
	Signals chan os.Signal

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
	sched := o.Schedule
	if len(sched) == 0 {
		sig := o.Signal
		if sig == 0 {
			sig = unix.SIGTERM
		}
		sched = stop.Default(sig, o.Grace)
	}
	if o.Dir != "" {
		if fi, err := os.Stat(o.Dir); err != nil || !fi.IsDir() {
			if err == nil {
				err = fmt.Errorf("not a directory")
			}
			return Result{}, spec.Errorf(spec.ExitNotRun, "working directory %s: %w", o.Dir, proc.UnwrapPath(err))
		}
	}

	// Subreaper before the child exists, so that nothing it forks can be
	// re-parented past us. The flag is per process; restore it afterwards.
	var was int32
	unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&was)), 0, 0, 0)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return Result{}, spec.Errorf(spec.ExitNotRun, "become child subreaper: %w", err)
	}
	if was == 0 {
		defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	}

	// Catch the forwarded signals before the child exists: one arriving
	// between fork and the forwarding loop waits in sigs instead of
	// killing the runner with its default action.
	forward := o.Forward
	if forward == nil {
		forward = DefaultForward
	}
	forward = slices.DeleteFunc(slices.Clone(forward), signal.Ignored)
	sigs := o.Signals
	if sigs == nil {
		sigs = make(chan os.Signal, 16)
		if len(forward) > 0 {
			signal.Notify(sigs, forward...)
			defer signal.Stop(sigs)
		}
	}

	// A command that is recorded, or must get a /proc of its own PID
	// namespace, starts held (gate.go).
	cmd, h, err := startCommand(o)
	if err != nil {
		return Result{}, err
	}
	pid := cmd.Process.Pid
	// The reaping loop owns the child from here; os.Process must never
	// wait for it. Release only drops the pidfd os/exec keeps.
	defer cmd.Process.Release()
	res := Result{Child: proc.ID{PID: pid}, Schedule: sched}
	if st, err := proc.ReadStat(pid); err == nil {
		// Unreaped, the child keeps its PID even as a zombie.
		res.Child.Start = st.Start
	}
	if t, ok := h.(*traced); ok {
		// A traced command is released before the reaping loop starts:
		// the loop must never see its stop.
		if err := t.open(res.Child, o.OnStart); err != nil {
			return Result{}, err
		}
	}
	r := startReaper(pid)
	if g, ok := h.(*gated); ok {
		if err := openGate(g, r, pid, res.Child, o.OnStart); err != nil {
			return Result{}, err
		}
	}

	var deadline <-chan time.Time
	if o.Deadline > 0 {
		tm := time.NewTimer(o.Deadline)
		defer tm.Stop()
		deadline = tm.C
	}
	done := ctx.Done()
	// Members of the command's group stopped with it on a deadline are
	// part of the command, not leftovers, even if reaped after it.
	stoppedWith := map[int]bool{}
	status, ok := r.childStatus, false
	var ws syscall.WaitStatus
wait:
	for {
		select {
		case ws = <-status:
			ok = true
			break wait
		case s := <-sigs:
			// The child is unreaped, so its PID, hence its group id, is
			// still ours: the group cannot be a recycled one.
			unix.Kill(-pid, s.(unix.Signal))
		case <-deadline:
			deadline, done = nil, nil
			res.DeadlineHit = true
			if !stopCommand(pid, res.Child, sched, stoppedWith) {
				break wait
			}
		case <-done:
			deadline, done = nil, nil
			res.Canceled = true
			if !stopCommand(pid, res.Child, sched, stoppedWith) {
				break wait
			}
		}
	}
	if !ok {
		// The command outlived KILL: nothing more can be done for it.
		res.ExitCode = spec.ExitNotRun
		if res.DeadlineHit {
			res.ExitCode = spec.ExitDeadline
		}
		res.Survivors = append(res.Survivors, res.Child)
		tr := stop.NewDescendants("", &r.hold)
		live, _ := tr.Sweep()
		tr.Close()
		for _, id := range live {
			if id.PID != pid {
				res.Survivors = append(res.Survivors, id)
			}
		}
		return res, nil
	}
	res.Status = ws
	res.Signaled = ws.Signaled()
	res.ExitCode = spec.ExitStatus(ws)
	if res.DeadlineHit {
		res.ExitCode = spec.ExitDeadline
	}
	exited := time.Now()
	cleanup(r, sched, stoppedWith, &res)
	res.Cleanup = time.Since(exited)
	return res, nil
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

// stopCommand stops the command's process group (and the command, should
// it have left the group) with the schedule. It reports whether the
// command is gone.
func stopCommand(pid int, child proc.ID, sched stop.Schedule, members map[int]bool) bool {
	if ids, err := proc.GroupMembers(pid); err == nil {
		for _, id := range ids {
			members[id.PID] = true
		}
	}
	targets := []stop.Target{&stop.Group{PGID: pid}}
	if p, err := stop.NewProcess(child, ""); err == nil {
		defer p.Close()
		targets = append(targets, p)
	}
	out := stop.Run(context.Background(), targets, sched)
	return out[len(out)-1].Gone
}

// cleanup stops and reaps everything the command left behind.
func cleanup(r *reaper, sched stop.Schedule, stoppedWith map[int]bool, res *Result) {
	r.countFromNow()
	tree := stop.NewDescendants("leftover processes", &r.hold)
	defer tree.Close()
	if !r.isDone() {
		lt := &leftovers{Tree: tree, done: r.done}
		out := stop.Run(context.Background(), []stop.Target{lt}, sched)
		if !out[0].Gone {
			live, _ := tree.Sweep()
			res.Survivors = live
			if len(live) == 0 {
				// Only zombies are left between two wait4 calls.
				select {
				case <-r.done:
				case <-time.After(time.Second):
				}
			}
		}
	}
	res.Killed = tree.Killed()
	// Leftovers: what the walks found plus what was reaped since the
	// cleanup began (a zombie re-parented to us when a walk was not looking).
	byPID := map[int]proc.ID{}
	for _, pid := range r.reapedAfter() {
		if !stoppedWith[pid] {
			byPID[pid] = proc.ID{PID: pid}
		}
	}
	for _, id := range tree.Found() {
		byPID[id.PID] = id
	}
	for _, id := range byPID {
		res.Leftovers = append(res.Leftovers, id)
	}
	slices.SortFunc(res.Leftovers, func(a, b proc.ID) int { return a.PID - b.PID })
}

// leftovers is the Target for everything left behind: the caller's
// descendants, gone exactly when the reaping loop finds no child left. A
// subreaper's descendants cannot escape it, so that is both exact and
// event-driven; the walk only serves to signal them.
type leftovers struct {
	*stop.Tree
	done <-chan struct{}
	sig  unix.Signal
}

func (l *leftovers) Gone() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

func (l *leftovers) Signal(sig unix.Signal) error {
	l.sig = sig
	err := l.Tree.Signal(sig)
	if errors.Is(err, proc.ErrGone) && !l.Gone() {
		// Nothing runs, but zombies wait to be reaped: not gone yet.
		return nil
	}
	return err
}

// Wait waits for the reaping loop to run out of children. During a KILL
// step it also kills, every few milliseconds, any descendant that appeared
// after the freeze (one that could not be stopped in time).
func (l *leftovers) Wait(ctx context.Context) error {
	var tick <-chan time.Time
	if l.sig == unix.SIGKILL {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-l.done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-tick:
			l.Tree.Sweep()
		}
	}
}

func orFile(f, def *os.File) *os.File {
	if f != nil {
		return f
	}
	return def
}

// StartError turns an error from starting command name into a one-line
// *spec.ExitError in a shell's words, carrying 127 (not found), 126 (not
// executable) or 125.
func StartError(name string, err error) error {
	code := spec.StartStatus(err)
	var ee *exec.Error
	switch {
	case code == spec.ExitNotFound:
		return spec.Errorf(code, "%s: command not found", name)
	case errors.As(err, &ee) && errors.Is(err, exec.ErrDot):
		return spec.Errorf(code, "%s: refusing to run a command found in the current directory through PATH: %w", name, err)
	case code == spec.ExitNoExec:
		return spec.Errorf(code, "%s: cannot execute: %w", name, proc.UnwrapPath(err))
	}
	return spec.Errorf(code, "%s: cannot start: %w", name, proc.UnwrapPath(err))
}

// reaper is the one owner of wait4 in the process.
type reaper struct {
	child       int
	childStatus chan syscall.WaitStatus // receives the command's status once
	done        chan struct{}           // closed when no child is left

	// hold is taken around each reap; the leftover walk holds it to
	// signal our children by PID without a pidfd (see stop.NewDescendants).
	hold sync.Mutex

	mu       sync.Mutex
	counting bool  // the leftover cleanup has begun
	after    []int // PIDs reaped since
}

func startReaper(child int) *reaper {
	r := &reaper{child: child, childStatus: make(chan syscall.WaitStatus, 1), done: make(chan struct{})}
	go r.loop()
	return r
}

func (r *reaper) loop() {
	defer close(r.done)
	for {
		// Learn which child is a zombie without reaping it, then reap it
		// under hold. __WALL: also children whose exit signal is not
		// SIGCHLD (clone).
		var info unix.Siginfo
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOWAIT|unix.WALL, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			// ECHILD: as subreaper, no child means no descendant at all.
			return
		}
		r.hold.Lock()
		var ws unix.WaitStatus
		pid, err := unix.Wait4(siginfoPID(&info), &ws, unix.WNOHANG|unix.WALL, nil)
		r.hold.Unlock()
		if err != nil || pid <= 0 {
			continue
		}
		r.mu.Lock()
		if pid == r.child {
			r.childStatus <- syscall.WaitStatus(ws)
		} else if r.counting {
			r.after = append(r.after, pid)
		}
		r.mu.Unlock()
	}
}

func (r *reaper) isDone() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// countFromNow starts recording what is reaped: the leftovers that one
// walk or another never saw alive.
func (r *reaper) countFromNow() {
	r.mu.Lock()
	r.counting = true
	r.mu.Unlock()
}

func (r *reaper) reapedAfter() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.after)
}

// siginfoPID returns si_pid from a waitid result: the first field of the
// union that follows three ints (si_signo, si_errno, si_code), which the
// kernel aligns to a pointer: offset 16 on 64-bit, 12 on 32-bit.
func siginfoPID(info *unix.Siginfo) int {
	off := uintptr(12)
	if unsafe.Sizeof(uintptr(0)) == 8 {
		off = 16
	}
	return int(*(*int32)(unsafe.Add(unsafe.Pointer(info), off)))
}
