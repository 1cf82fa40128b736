// Package handoff launches a detached adopt worker for a fenced execution
// and waits for its acknowledgement: the mechanics behind ledger spawn.
//
// The worker runs in a new session, so the caller's process group can be
// killed without touching it. Where systemd's user manager works it also
// runs inside a transient scope (systemd-run --user --scope --collect), so
// that stopping the caller's service or cgroup does not take the worker
// with it; Probe tells whether that works here.
//
//	w, err := handoff.Launch(handoff.Spec{Adopt: path, Ledger: dir, ID: id, AckFile: ack, Argv: argv, Scope: true})
//	ack, err := w.WaitAck(ctx)   // ErrWorkerExited if it died before acking
package handoff

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/internal/durable"
	"github.com/tether-sh/tether/lib/internal/gate"
	"github.com/tether-sh/tether/lib/internal/reexec"
	"github.com/tether-sh/tether/lib/internal/sigstate"
	"github.com/tether-sh/tether/lib/proc"
)

// Sentinel errors.
var (
	// ErrNoScope means systemd-run --user --scope is not usable here.
	ErrNoScope = errors.New("systemd-run --user --scope is not available")
	// ErrNoManager means there is no systemd user manager to ask at all
	// (no systemd-run, or no user bus to reach one): a host or session
	// without one, not a fault of one. Probe's errors that say so wrap
	// both it and ErrNoScope.
	ErrNoManager = errors.New("no systemd user manager")
	// ErrWorkerExited means the worker exited before acknowledging.
	ErrWorkerExited = errors.New("worker exited before ownership acknowledgement")
	// ErrAckTimeout means no acknowledgement arrived in time.
	ErrAckTimeout = errors.New("no ownership acknowledgement in time")
)

// probeTimeout bounds the systemd-run probe: a wedged user manager must not
// stall every spawn.
const probeTimeout = 3 * time.Second

// SystemdRun is the program Probe and ScopeArgv use; tests replace it.
var SystemdRun = "systemd-run"

// Probe reports whether systemd-run --user --scope works here by running
// `true` in a transient scope. Its error says why not, wrapping ErrNoScope,
// and ErrNoManager too when there is no user manager to ask.
func Probe(ctx context.Context) error {
	path, err := exec.LookPath(SystemdRun)
	if err != nil {
		return &probeError{msg: fmt.Sprintf("%v: %s not found", ErrNoScope, SystemdRun), absent: true}
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--user", "--scope", "--collect", "--quiet", "--", "true")
	// Something the probe left holding its output must not stall us.
	cmd.WaitDelay = 100 * time.Millisecond
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := firstLine(out)
		switch {
		case ctx.Err() != nil:
			msg = fmt.Sprintf("%s did not answer within %v", SystemdRun, probeTimeout)
		case msg == "":
			msg = err.Error()
		}
		// systemd-run's words when no user bus can be reached: no
		// $XDG_RUNTIME_DIR (cron, su, a container), or no systemd at all.
		// Older releases say "to bus", newer "to user scope bus".
		absent := strings.HasPrefix(msg, "Failed to connect to ") && strings.Contains(msg, "bus")
		return &probeError{msg: fmt.Sprintf("%v: %s", ErrNoScope, msg), absent: absent}
	}
	return nil
}

// probeError is Probe's error: it is ErrNoScope, and ErrNoManager when
// absent says that no user manager could be asked.
type probeError struct {
	msg    string
	absent bool
}

func (e *probeError) Error() string { return e.msg }

func (e *probeError) Is(target error) bool {
	return target == ErrNoScope || (e.absent && target == ErrNoManager)
}

func firstLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return s
}

// Spec describes one worker.
type Spec struct {
	Adopt   string   // path of the adopt program
	Ledger  string   // store directory
	ID      string   // fenced execution id
	AckFile string   // where adopt writes its ack
	Argv    []string // the payload
	Scope   bool     // run inside systemd-run --user --scope
	Log     string   // worker's stdout and stderr; empty: /dev/null
	Env     []string // added to the worker's environment
	Flags   []string // more adopt flags, before ID
}

// AdoptArgv is the adopt command line for s.
func AdoptArgv(s Spec) []string {
	argv := []string{s.Adopt}
	if s.Ledger != "" {
		argv = append(argv, "--ledger", s.Ledger)
	}
	argv = append(append(argv, "--ack-file", s.AckFile), s.Flags...)
	argv = append(argv, s.ID, "--")
	return append(argv, s.Argv...)
}

// ScopeArgv wraps argv in a transient systemd user scope named after the
// execution, collected even if it fails.
func ScopeArgv(id string, argv []string) []string {
	out := []string{SystemdRun, "--user", "--scope", "--collect", "--quiet",
		"--unit", "tether-" + id, "--description", "tether execution " + id, "--"}
	return append(out, argv...)
}

// Worker is a launched worker.
type Worker struct {
	cmd     *exec.Cmd
	ackFile string
	id      string
	scoped  bool
	exited  chan struct{}
}

// Launch starts the worker detached: a new session, stdin from /dev/null,
// output to s.Log or /dev/null so that it never holds the caller's pipes
// (a caller in $(...) would otherwise wait for the worker to finish).
func Launch(s Spec) (*Worker, error) {
	argv := AdoptArgv(s)
	if s.Scope {
		argv = ScopeArgv(s.ID, argv)
	}
	path := argv[0]
	if filepath.Base(path) == path {
		p, err := exec.LookPath(path)
		if err != nil {
			return nil, err
		}
		path = p
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer devnull.Close()
	out := devnull
	if s.Log != "" {
		// No link followed, no FIFO or device blocked on or written to:
		// a spawn run as root must append to the file named, not to the
		// target of a link someone planted there.
		f, err := os.OpenFile(s.Log, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("log file %s: a symbolic link, which is not followed", s.Log)
		}
		if err != nil {
			return nil, fmt.Errorf("log file: %w", err)
		}
		defer f.Close()
		if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("log file %s: not a regular file", s.Log)
		}
		out = f
	}
	cmd := &exec.Cmd{Path: path, Args: argv, Stdin: devnull, Stdout: out, Stderr: out,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
	if len(s.Env) > 0 {
		cmd.Env = append(os.Environ(), s.Env...)
	}
	faults := sigstate.Faults()
	if len(faults) == 0 {
		if err := cmd.Start(); err != nil {
			return nil, err
		}
	} else if err := startGated(cmd, faults); err != nil {
		return nil, err
	}
	w := &Worker{cmd: cmd, ackFile: s.AckFile, id: s.ID, scoped: s.Scope, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(w.exited)
	}()
	return w, nil
}

// startGated starts cmd through the runner's gate (lib/internal/gate),
// which ignores faults, the synchronous faults this process was started
// with ignored, just before it execs cmd: this runtime resets them in
// every child it forks, and the worker, and through it the payload, is to
// inherit them ignored as the other signals (sigstate.Faults). It returns
// once cmd's program runs, the gate's PID now its.
func startGated(cmd *exec.Cmd, faults []syscall.Signal) error {
	mode, sep := "-", ":"
	for _, sig := range faults {
		mode += sep + strconv.Itoa(int(sig))
		sep = ","
	}
	gc := reexec.Command(gate.Role, cmd.Env, append([]string{mode, cmd.Path}, cmd.Args...)...)
	relR, relW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer relW.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		relR.Close()
		return err
	}
	defer errR.Close()
	cmd.Path, cmd.Args, cmd.Env, cmd.ExtraFiles = gc.Path, gc.Args, gc.Env, []*os.File{relR, errW}
	err = cmd.Start()
	// The gate has its own copies; ours would hide its end-of-file.
	relR.Close()
	errW.Close()
	if err != nil {
		return err
	}
	if _, err := relW.Write([]byte{gate.Release}); err != nil {
		return fmt.Errorf("the gate is gone: %w", err)
	}
	relW.Close()
	var msg [5]byte
	if n, _ := io.ReadFull(errR, msg[:]); n == 0 {
		return nil
	}
	// The gate could not exec, and exits: reap it.
	cmd.Wait()
	errno := syscall.Errno(binary.LittleEndian.Uint32(msg[1:]))
	return &os.PathError{Op: "exec", Path: gc.Args[3], Err: errno}
}

// PID is the worker's process id.
func (w *Worker) PID() int { return w.cmd.Process.Pid }

// Scoped reports whether the worker runs inside a systemd scope.
func (w *Worker) Scoped() bool { return w.scoped }

// Exited is closed once the worker has exited (and been reaped).
func (w *Worker) Exited() <-chan struct{} { return w.exited }

// ExitCode is the worker's exit status once Exited is closed: its exit
// status, or 128+N when it died of signal N.
func (w *Worker) ExitCode() int { return exit.ForState(w.cmd.ProcessState) }

// Stop stops a worker that is still running: TERM, at most grace, then
// KILL, and waits until it has exited. The worker is this process's child
// and is signalled through os.Process (a pidfd where the kernel has one),
// so a worker that has already exited and been reaped is never confused
// with a process that reused its PID.
func (w *Worker) Stop(grace time.Duration) {
	select {
	case <-w.exited:
		return
	default:
	}
	w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.exited:
		return
	case <-time.After(grace):
	}
	w.cmd.Process.Signal(syscall.SIGKILL)
	<-w.exited
}

// Ack is adopt's acknowledgement.
type Ack struct {
	ExecutionID string `json:"execution_id"`
	PID         int    `json:"pid"`
	Start       uint64 `json:"start"`
}

// ID returns the acknowledging process's identity.
func (a Ack) ID() proc.ID { return proc.ID{PID: a.PID, Start: a.Start} }

// ackPoll bounds how often the ack file is looked for; it starts at 1ms
// so a fast worker is seen at once.
const ackPoll = 20 * time.Millisecond

// WaitAck waits until the ack file appears and names this execution, the
// worker exits first (an error wrapping ErrWorkerExited, with its exit
// status), or ctx is done (ErrAckTimeout).
func (w *Worker) WaitAck(ctx context.Context) (Ack, error) {
	check := func() (Ack, bool, error) {
		a, err := ReadAck(w.ackFile)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return Ack{}, false, nil
		case err != nil:
			return Ack{}, true, err
		case a.ExecutionID != w.id:
			return Ack{}, true, fmt.Errorf("ack file %s names execution %q, not %s", w.ackFile, a.ExecutionID, w.id)
		}
		return a, true, nil
	}
	for delay := time.Millisecond; ; delay = min(2*delay, ackPoll) {
		if a, done, err := check(); done {
			return a, err
		}
		select {
		case <-w.exited:
			// The ack may have landed just before the exit.
			if a, done, err := check(); done {
				return a, err
			}
			return Ack{}, fmt.Errorf("%w (exit status %d)", ErrWorkerExited, w.ExitCode())
		case <-ctx.Done():
			if a, done, err := check(); done {
				return a, err
			}
			return Ack{}, ErrAckTimeout
		case <-time.After(delay):
		}
	}
}

// ReadAck reads and parses an ack file.
func ReadAck(path string) (Ack, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Ack{}, err
	}
	var a Ack
	if err := json.Unmarshal(b, &a); err != nil {
		return Ack{}, fmt.Errorf("ack file %s: %w", path, err)
	}
	if a.PID < 1 || a.PID > proc.MaxPID {
		return Ack{}, fmt.Errorf("ack file %s: pid %d is out of range", path, a.PID)
	}
	return a, nil
}

// WriteAck writes the acknowledgement for execution id by process self
// durably and atomically (durable.WriteFile: a 0600 temp file in the same
// directory, fdatasync, rename, fsync of the directory). A reader never
// sees a partial ack.
func WriteAck(path, id string, self proc.ID) error {
	b, err := json.Marshal(Ack{ExecutionID: id, PID: self.PID, Start: self.Start})
	if err != nil {
		return err
	}
	return durable.WriteFile(path, append(b, '\n'), 0o600)
}
