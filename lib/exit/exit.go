package exit

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
	OK       = 0   // done
	Refused  = 1   // refused, or the condition was not met
	Usage    = 2   // usage error or bad input
	System   = 3   // permission, I/O, corrupt store
	Deadline = 124 // a deadline stopped the command
	NotRun   = 125 // refused or failed before the command started (or something survived KILL)
	NoExec   = 126 // command found but not executable
	NotFound = 127 // command not found
)

// Error is an error that knows the exit code it should produce.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and a formatted message.
// A %w verb keeps the wrapped error reachable through errors.Is.
func Errorf(code int, format string, args ...any) error {
	return &Error{Code: code, Err: fmt.Errorf(format, args...)}
}

// Code reports the exit code an error should produce: OK for nil, the
// code of the first *Error in its chain, or fallback.
func Code(err error, fallback int) int {
	if err == nil {
		return OK
	}
	var ee *Error
	if errors.As(err, &ee) {
		return ee.Code
	}
	return fallback
}

// ForSignal is the exit code a shell reports for a process killed by sig,
// and the code a tool exits with after forwarding sig: 128+N.
func ForSignal(sig syscall.Signal) int { return 128 + int(sig) }

// ForWait maps a finished process's wait status to an exit code: its
// exit status, or ForSignal of the signal that killed it. A status that
// is neither (stopped, continued) maps to NotRun.
func ForWait(ws syscall.WaitStatus) int {
	switch {
	case ws.Exited():
		return ws.ExitStatus()
	case ws.Signaled():
		return ForSignal(ws.Signal())
	}
	return NotRun
}

// ForState is ForWait for an *os.ProcessState.
func ForState(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok {
		return ForWait(ws)
	}
	return ps.ExitCode()
}

// ForStart maps an error from starting a command to 127 (not found) or
// 126 (found but not executable), as a shell does; other failures are 125.
func ForStart(err error) int {
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return NotFound
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.ENOEXEC),
		errors.Is(err, syscall.EISDIR), errors.Is(err, exec.ErrDot):
		return NoExec
	}
	return NotRun
}
