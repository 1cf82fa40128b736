// Package runner runs a command as a child the way every tether runner
// does: in its own process group, with its exit status mapped to the shell
// conventions of SPEC §1.
package runner

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"syscall"

	"github.com/tether-sh/tether/lib/cli"
)

// ExitStatus maps a finished child's wait status to an exit code: its exit
// status, or 128+N when it died of signal N.
func ExitStatus(ws syscall.WaitStatus) int {
	switch {
	case ws.Exited():
		return ws.ExitStatus()
	case ws.Signaled():
		return 128 + int(ws.Signal())
	}
	return cli.ExitNotRun
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
		return cli.ExitNotFound
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.ENOEXEC),
		errors.Is(err, syscall.EISDIR), errors.Is(err, exec.ErrDot):
		return cli.ExitNoExec
	}
	return cli.ExitNotRun
}
