package proc

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/syntax"
)

// ErrExitUnknown is wrapped by ExitInfo when the kernel cannot say how a
// process ended: a kernel without PIDFD_INFO_EXIT (Linux < 6.15), no pidfd
// held before the process was reaped, a zombie whose status the caller may
// not read, or a process that has not exited.
var ErrExitUnknown = errors.New("exit status unknown")

// ExitInfo is how a process ended, as wait(2) would have told its parent.
type ExitInfo struct {
	// Code is the exit status (0–255) when Signal is 0.
	Code int
	// Signal is the signal that killed the process, or 0 if it exited.
	Signal unix.Signal
	// CoreDumped reports that the killing signal dumped core.
	CoreDumped bool
	// Reaped reports that the process's parent (or init) has collected it;
	// false for a zombie nobody has waited for yet.
	Reaped bool
}

// exitInfoFromWaitStatus decodes a status in waitpid(2)'s form, as both
// PIDFD_INFO_EXIT and field 52 of /proc/PID/stat give it.
func exitInfoFromWaitStatus(ws uint32, reaped bool) ExitInfo {
	w := unix.WaitStatus(ws)
	switch {
	case w.Signaled():
		return ExitInfo{Signal: w.Signal(), CoreDumped: w.CoreDump(), Reaped: reaped}
	default:
		return ExitInfo{Code: w.ExitStatus(), Reaped: reaped}
	}
}

// Status is the exit status a shell reports for the process: Code, or
// exit.ForSignal of the signal that killed it.
func (e ExitInfo) Status() int {
	if e.Signal != 0 {
		return exit.ForSignal(e.Signal)
	}
	return e.Code
}

// String says how the process ended: "exited 3", "was killed by KILL",
// "was killed by SEGV (core dumped)".
func (e ExitInfo) String() string {
	if e.Signal == 0 {
		return fmt.Sprintf("exited %d", e.Code)
	}
	s := "was killed by " + syntax.SignalName(e.Signal)
	if e.CoreDumped {
		s += " (core dumped)"
	}
	return s
}

// ExitJSON is how a process ended as every tool's --json prints it: the
// status as a shell reports it, exit_code when it exited, signal (a name)
// when a signal killed it, reaped false for a zombie nobody collected yet.
// A nil field is JSON null: not known. Embed it to get the four keys.
type ExitJSON struct {
	Status   *int    `json:"status"`
	ExitCode *int    `json:"exit_code"`
	Signal   *string `json:"signal"`
	Reaped   *bool   `json:"reaped"`
}

// JSON returns i as ExitJSON, every field known.
func (i ExitInfo) JSON() ExitJSON {
	status, reaped := i.Status(), i.Reaped
	j := ExitJSON{Status: &status, Reaped: &reaped}
	if i.Signal != 0 {
		name := syntax.SignalName(i.Signal)
		j.Signal = &name
	} else {
		code := i.Code
		j.ExitCode = &code
	}
	return j
}
