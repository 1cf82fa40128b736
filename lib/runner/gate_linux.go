package runner

// Holding a recorded command. A runner that records its payload (ledger
// run, adopt, spawn's worker) must let the payload's first instruction run
// only once the payload's PID@START is durable, and never if the runner
// dies first (CONTRACT.md §3.2, "Recorded before it runs"). os/exec cannot pause a
// child between fork and exec, so the command is held one of two ways.
//
// Traced (the usual way). The child asks to be traced (PTRACE_TRACEME)
// before its exec, so the kernel stops it at the exec: the payload's image
// is loaded, its PID and start time are final, and not one of its
// instructions has run. The runner records it, then detaches, and the
// payload runs. Should the runner die first, the kernel kills the stopped
// child: its parent-death signal is KILL, PTRACE_O_EXITKILL is set as soon
// as the stop is seen, and before that the stop's own SIGTRAP, which a
// detach on the tracer's death delivers, kills it. A traced exec costs
// a few system calls, not a process start.
//
// The gate, where tracing cannot be used: the payload is set-user-ID,
// set-group-ID or has file capabilities (a traced exec would drop them),
// ptrace is refused here (Yama, seccomp, a runner that is itself traced),
// the payload needs a /proc of its own PID namespace, or the runner was
// started with a synchronous fault (SEGV, BUS, ...) ignored, which only a
// process about to exec can hand on (sigstate.Faults; then even a command
// nothing records starts behind the gate, released at once). The runner starts
// a gate instead: a fresh process of its own executable that blocks
// reading a pipe (lib/internal/gate). Its PID and start time are the
// payload's, since exec keeps both. The runner records them, then writes
// the release, one byte, and the gate execs the payload. Should the runner
// die first, the gate reads end-of-file (or is killed by its parent-death
// signal) and exits without running anything. Exec failures after the
// release come back over a second, close-on-exec pipe: end-of-file means
// the exec succeeded; otherwise the gate writes a kind byte and the errno,
// and exits. With PIDNamespace the gate is also where a fresh /proc is
// mounted, in the new mount namespace, before the exec: a payload must
// never judge processes through the host's /proc (CONTRACT.md §1).

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/proc"

	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/syntax"

	"github.com/tether-sh/tether/lib/internal/gate"
	"github.com/tether-sh/tether/lib/internal/reexec"
	"github.com/tether-sh/tether/lib/internal/sigstate"
)

// gated is the runner's side of one gated start.
type gated struct {
	release *os.File // write end: the release lets the payload run
	errors  *os.File // read end: end-of-file once the payload exec'd
	name    string   // the command as given, for messages
	path    string   // the payload's resolved path
}

// gateCommand returns the gate's command for o, not yet started, and the
// runner's side of it. path is the payload's resolved path; o.Env its
// environment (nil: the runner's), less the re-exec marker the gate is
// started with and removes before its exec.
func gateCommand(o Options, path string, cmdEnv []string) (*exec.Cmd, *gated, error) {
	relR, relW, err := os.Pipe()
	if err != nil {
		return nil, nil, exit.Errorf(exit.NotRun, "cannot start %s: %w", syntax.EscapeControlChars(o.Argv[0]), err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		relR.Close()
		relW.Close()
		return nil, nil, exit.Errorf(exit.NotRun, "cannot start %s: %w", syntax.EscapeControlChars(o.Argv[0]), err)
	}
	mode := "-"
	if o.PIDNamespace {
		mode = "proc"
	}
	sep := ":"
	for _, sig := range sigstate.Faults() {
		mode += sep + strconv.Itoa(int(sig))
		sep = ","
	}
	// This process's own executable, even if it was replaced on disk, in
	// the gate's role.
	env := o.Env
	if o.Stamp != nil && o.OnStart != nil {
		env = cmdEnv
	}
	cmd := reexec.Command(gate.Role, env, append([]string{mode, path}, o.Argv...)...)
	cmd.ExtraFiles = []*os.File{relR, errW} // descriptors 3 and 4
	return cmd, &gated{release: relW, errors: errR, name: o.Argv[0], path: path}, nil
}

// open lets the payload run, with stamp (NAME=VALUE, "" for none) set in
// its environment, and reports whether it did: nil once it has exec'd,
// else the start error (the gate has then exited).
func (g *gated) open(stamp string) error {
	defer g.errors.Close()
	rel := []byte{gate.Release}
	if stamp != "" {
		// One write of at most 258 bytes: atomic on a pipe.
		rel = append([]byte{gate.Stamped, byte(len(stamp))}, stamp...)
	}
	_, err := g.release.Write(rel)
	g.release.Close()
	if err != nil {
		return exit.Errorf(exit.NotRun, "cannot start %s: the gate is gone: %w", syntax.EscapeControlChars(g.name), err)
	}
	var msg [5]byte
	n, _ := io.ReadFull(g.errors, msg[:])
	if n == 0 {
		return nil
	}
	if n < len(msg) {
		return exit.Errorf(exit.NotRun, "cannot start %s: the gate failed", syntax.EscapeControlChars(g.name))
	}
	errno := syscall.Errno(binary.LittleEndian.Uint32(msg[1:]))
	if msg[0] == gate.MountFailed {
		return exit.Errorf(exit.NotRun, "cannot mount /proc for %s in its PID namespace: %w", syntax.EscapeControlChars(g.name), errno)
	}
	return StartError(g.name, &os.PathError{Op: "exec", Path: g.path, Err: errno})
}

// shut keeps the payload from ever running: the gate reads end-of-file.
func (g *gated) shut() {
	g.release.Close()
	g.errors.Close()
}

// holder is how a started command is held before its first instruction:
// *traced, *gated, or unheld when nothing asked for it to be held.
type holder interface {
	// letRun records the command through onStart, if set, and then
	// lets it run; reap starts r's reaping loop, which each way of
	// holding calls at its own moment. On error the command never ran
	// and nothing of it is left.
	letRun(r *run, onStart func(proc.ID) error, reap func()) error
}

// unheld is a command that was started running: there is nothing to
// record or release, only the reaping to start.
type unheld struct{}

func (unheld) letRun(_ *run, _ func(proc.ID) error, reap func()) error {
	reap()
	return nil
}

// letRun: a gated command is released once the reaping loop runs, which
// collects the gate should it run nothing.
func (g *gated) letRun(r *run, onStart func(proc.ID) error, reap func()) error {
	reap()
	if r.tty != nil && r.o.PIDNamespace {
		// The child, its namespace's PID 1, cannot name its own group
		// in ours: the runner gives it the terminal while it is held.
		r.tty.setForeground(r.pid)
	}
	var err error
	if onStart != nil {
		if err = onStart(r.res.Child); err != nil {
			g.shut()
			// Our unreaped child: its PID cannot be a recycled one.
			unix.Kill(r.pid, unix.SIGKILL)
			err = &exit.Error{Code: exit.Code(err, exit.NotRun), Err: err}
		}
	}
	if err == nil {
		var stamp string
		if stamp, err = stampOf(r.o); err == nil {
			err = g.open(stamp)
		} else {
			g.shut()
			unix.Kill(r.pid, unix.SIGKILL)
		}
	}
	if err != nil {
		// The gate has exited, or is dying: reaped, nothing of it is left.
		<-r.reap.childStatus
		<-r.reap.done
	}
	return err
}

// traceRefused, when set by a test, makes a traced start fail as where
// ptrace is refused, to prove the fall-back to the gate.
var traceRefused bool

// startCommand starts o.Argv as Run's child: in its own process group,
// killed should the runner die, and held when o.OnStart or o.PIDNamespace
// asks for it (traced where it can be, else behind the gate). A held
// command is released by Run once OnStart has recorded it.
//
// With tty, the command's group is made the terminal's foreground before
// the command runs (terminal_linux.go).
func startCommand(o Options, tty *terminal) (int, holder, error) {
	build := func() *exec.Cmd {
		cmd := command(o.Argv)
		cmd.Env = o.Env
		if o.Stamp != nil && o.OnStart != nil {
			if cmd.Env == nil {
				cmd.Env = os.Environ()
			}
			cmd.Env = append(slices.DeleteFunc(slices.Clone(cmd.Env), func(kv string) bool {
				return strings.HasPrefix(kv, o.Stamp.Name+"=")
			}), o.Stamp.Name+"="+stampPlaceholder)
		}
		cmd.Dir = o.Dir
		cmd.Stdin, cmd.Stdout, cmd.Stderr = orFile(o.Stdin, os.Stdin), orFile(o.Stdout, os.Stdout), orFile(o.Stderr, os.Stderr)
		// Setpgid: its own group, so forwarding and the deadline reach the
		// command and its helpers but never the runner. Pdeathsig: if the
		// runner is SIGKILLed the child must not run on; Go's child
		// re-checks the parent after setting it, and the runtime never ends
		// the thread that forked (the flag is per thread) while the
		// goroutine is unlocked.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if tty != nil && !o.PIDNamespace {
			// The child takes the foreground itself, with every signal
			// blocked, before its exec: before it could read the terminal.
			cmd.SysProcAttr.Foreground, cmd.SysProcAttr.Ctty = true, tty.fd
		}
		return cmd
	}
	cmd := build()
	// A synchronous fault the caller ignored (SEGV) reaches the command
	// ignored only through the gate: this runtime resets it in every
	// child it forks, and a traced exec cannot change it (sigstate.Faults).
	faults := len(sigstate.Faults()) > 0
	if o.OnStart == nil && !o.PIDNamespace && !faults {
		pid, err := forkExec(cmd)
		if err != nil {
			return 0, nil, StartError(o.Argv[0], err)
		}
		return pid, unheld{}, nil
	}
	if cmd.Err != nil {
		return 0, nil, StartError(o.Argv[0], cmd.Err)
	}
	path := cmd.Path
	if !o.PIDNamespace && !faults && traceable(path) {
		t, err := startTraced(cmd, o)
		if err == nil {
			return t.pid, t, nil
		}
		if !errors.Is(err, syscall.EPERM) {
			return 0, nil, StartError(o.Argv[0], err)
		}
		// ptrace is refused here: hold it at the gate instead.
		cmd = build()
	}
	gc, g, err := gateCommand(o, path, cmd.Env)
	if err != nil {
		return 0, nil, err
	}
	gc.Dir, gc.Stdin, gc.Stdout, gc.Stderr, gc.SysProcAttr = cmd.Dir, cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.SysProcAttr
	if o.PIDNamespace {
		// A mount namespace too, where the gate mounts the fresh /proc.
		gc.SysProcAttr.Cloneflags = syscall.CLONE_NEWPID | syscall.CLONE_NEWNS
	}
	pid, err := forkExec(gc)
	for _, f := range gc.ExtraFiles {
		// The gate has its own copies; ours would hide its end-of-file.
		f.Close()
	}
	if err != nil {
		g.shut()
		if o.PIDNamespace && (errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EUSERS)) {
			return 0, nil, exit.Errorf(exit.NotRun, "cannot create a PID namespace for %s: %w", syntax.EscapeControlChars(o.Argv[0]), proc.UnwrapPath(err))
		}
		return 0, nil, StartError(o.Argv[0], err)
	}
	return pid, g, nil
}

// traceable reports whether the program at path may be exec'd traced: a
// traced exec ignores set-user-ID and set-group-ID bits and file
// capabilities, so such a program goes through the gate, which keeps them.
func traceable(path string) bool {
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil || st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
		return false
	}
	_, err := unix.Getxattr(path, "security.capability", nil)
	return errors.Is(err, unix.ENODATA) || errors.Is(err, unix.ENOTSUP)
}

// traced is a command stopped by the kernel at its exec, before its first
// instruction, with this goroutine's thread its tracer.
type traced struct {
	pid  int
	name string
	o    Options // for its Stamp
	// sig is the signal to deliver on release: one that stopped the child
	// before its exec (it was sent, it must not be lost), or none for the
	// exec's own SIGTRAP.
	sig unix.Signal
}

// startTraced starts cmd traced and waits for its exec-stop. It returns
// with the calling goroutine locked to its thread, the tracer's, until
// open or shut; an error (EPERM where ptrace is refused) leaves nothing
// behind and the goroutine unlocked.
func startTraced(cmd *exec.Cmd, o Options) (*traced, error) {
	runtime.LockOSThread()
	if traceRefused {
		runtime.UnlockOSThread()
		return nil, &os.PathError{Op: "fork/exec", Path: cmd.Path, Err: syscall.EPERM}
	}
	cmd.SysProcAttr.Ptrace = true
	pid, err := forkExec(cmd)
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	t := &traced{pid: pid, name: cmd.Args[0], o: o}
	for {
		var ws unix.WaitStatus
		_, err := unix.Wait4(t.pid, &ws, unix.WALL, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			t.shut()
			return nil, err
		case ws.Stopped():
			if sig := ws.StopSignal(); sig != unix.SIGTRAP {
				t.sig = sig
			}
			// From here on the kernel kills it should this thread's
			// process die: nothing of it would ever run.
			unix.PtraceSetOptions(t.pid, unix.PTRACE_O_EXITKILL)
			return t, nil
		default:
			// Killed before its exec completed (someone signalled its
			// group); it is reaped and never ran.
			runtime.UnlockOSThread()
			return nil, exit.Errorf(exit.NotRun, "cannot start %s: killed before it ran (%s)", t.name, describe(ws))
		}
	}
}

// letRun: a traced command is released before the reaping loop starts,
// which must never see its stop.
func (t *traced) letRun(r *run, onStart func(proc.ID) error, reap func()) error {
	if err := t.open(r.res.Child, onStart); err != nil {
		return err
	}
	reap()
	return nil
}

// open records the stopped command through onStart, if set, and then lets
// it run. On error the command never ran and has been reaped.
func (t *traced) open(child proc.ID, onStart func(proc.ID) error) error {
	if onStart != nil {
		if err := onStart(child); err != nil {
			t.shut()
			return &exit.Error{Code: exit.Code(err, exit.NotRun), Err: err}
		}
	}
	if err := t.stamp(); err != nil {
		t.shut()
		return err
	}
	// The exec's SIGTRAP is dropped, any other stop signal delivered. It
	// fails only if the command was killed meanwhile; the reaping loop
	// collects it.
	unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_DETACH, uintptr(t.pid), 0, uintptr(t.sig), 0, 0)
	runtime.UnlockOSThread()
	return nil
}

// shut kills the stopped command, which never ran, and reaps it.
func (t *traced) shut() {
	// Our unreaped child: its PID cannot be a recycled one.
	unix.Kill(t.pid, unix.SIGKILL)
	var ws unix.WaitStatus
	for {
		if _, err := unix.Wait4(t.pid, &ws, unix.WALL, nil); !errors.Is(err, unix.EINTR) {
			break
		}
	}
	runtime.UnlockOSThread()
}

// describe words a wait status that is not an exit for a message.
func describe(ws unix.WaitStatus) string {
	if ws.Signaled() {
		return "signal " + syntax.SignalName(ws.Signal())
	}
	return "exit status " + strconv.Itoa(ws.ExitStatus())
}
