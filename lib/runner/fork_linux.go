package runner

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"syscall"
)

// forkExec starts cmd as exec.Cmd.Start would and returns its PID, but
// through syscall.StartProcess, with no os.Process: the reaper owns the
// child (doc.go), so the runner has no use for the pidfd os/exec would
// open, and the first os.StartProcess of a process probes pidfd support
// with a throwaway child of its own (a vfork and a wait), about 0.2 ms of
// every ledger run, reap and watchpid. cmd's standard files must be
// *os.File (orFile), as the runner's always are. Errors are those of
// exec.Cmd.Start: cmd.Err (the lookup), or a *os.PathError "fork/exec".
func forkExec(cmd *exec.Cmd) (int, error) {
	if cmd.Err != nil {
		return 0, cmd.Err
	}
	std := []any{cmd.Stdin, cmd.Stdout, cmd.Stderr}
	files := make([]*os.File, 0, len(std)+len(cmd.ExtraFiles))
	for _, s := range std {
		f, ok := s.(*os.File)
		if !ok {
			return 0, errors.New("runner: a command's standard files must be *os.File")
		}
		files = append(files, f)
	}
	files = append(files, cmd.ExtraFiles...)
	fds := make([]uintptr, len(files))
	for i, f := range files {
		fds[i] = f.Fd()
	}
	pid, _, err := syscall.StartProcess(cmd.Path, cmd.Args, &syscall.ProcAttr{
		Dir:   cmd.Dir,
		Env:   cmd.Environ(),
		Files: fds,
		Sys:   cmd.SysProcAttr,
	})
	// The descriptors must stay open until the child has its copies.
	runtime.KeepAlive(files)
	if err != nil {
		return 0, &os.PathError{Op: "fork/exec", Path: cmd.Path, Err: err}
	}
	return pid, nil
}
