package spec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"syscall"
)

// Exit codes shared by every tool (CONTRACT.md §2).
const (
	ExitOK       = 0   // done
	ExitRefused  = 1   // refused, or the condition was not met
	ExitUsage    = 2   // usage error or bad input
	ExitSystem   = 3   // permission, I/O, corrupt store
	ExitDeadline = 124 // a deadline stopped the command
	ExitNotRun   = 125 // refused or failed before the command started (or something survived KILL)
	ExitNoExec   = 126 // command found but not executable
	ExitNotFound = 127 // command not found
)

// ExitError is an error that knows the exit code it should produce.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// Errorf returns an *ExitError with the given code and a formatted message.
// A %w verb keeps the wrapped error reachable through errors.Is.
func Errorf(code int, format string, args ...any) error {
	return &ExitError{Code: code, Err: fmt.Errorf(format, args...)}
}

// Code reports the exit code an error should produce: ExitOK for nil, the
// code of the first *ExitError in its chain, or fallback.
func Code(err error, fallback int) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return fallback
}

// SignalExit is the exit code a shell reports for a process killed by sig,
// and the code a tool exits with after forwarding sig: 128+N.
func SignalExit(sig syscall.Signal) int { return 128 + int(sig) }

// ExitStatus maps a finished process's wait status to an exit code: its
// exit status, or SignalExit of the signal that killed it. A status that
// is neither (stopped, continued) maps to ExitNotRun.
func ExitStatus(ws syscall.WaitStatus) int {
	switch {
	case ws.Exited():
		return ws.ExitStatus()
	case ws.Signaled():
		return SignalExit(ws.Signal())
	}
	return ExitNotRun
}

// StateStatus is ExitStatus for an *os.ProcessState.
func StateStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok {
		return ExitStatus(ws)
	}
	return ps.ExitCode()
}

// StartStatus maps an error from starting a command to 127 (not found) or
// 126 (found but not executable), as a shell does; other failures are 125.
func StartStatus(err error) int {
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return ExitNotFound
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.ENOEXEC),
		errors.Is(err, syscall.EISDIR), errors.Is(err, exec.ErrDot):
		return ExitNoExec
	}
	return ExitNotRun
}
