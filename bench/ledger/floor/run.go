//go:build linux

package main

// With FLOOR_PROTOCOL=log, `floor --ledger DIR run JOB -- CMD [ARG...]` is
// the least `ledger run JOB -- CMD` can cost with the log design (log.go),
// in one process as ledger runs it:
//
//   - the command is started held, as lib/runner holds it: traced
//     (PTRACE_TRACEME), so that the kernel stops it at its exec, before its
//     first instruction, with its parent-death signal KILL;
//   - under the store's lock, the execution's link is made and its claim
//     and start entries (the start naming the held command's PID@START)
//     are appended in one write and made durable by one fdatasync;
//   - the command is let go (PTRACE_DETACH) and waited for;
//   - its finish entry is appended, durably, its index entry written and
//     its link removed, as the log design's finish does.
//
// Two durable flushes, as `ledger run` makes (bench/ledger/run.sh (e)).
// Nothing else: no flag parsing, no JSON, no output capture, no signal
// forwarding, no checks.

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

func logRun(dir, job string, argv []string) error {
	if err := prepare(dir, job); err != nil {
		return err
	}
	// ptrace requests must come from the thread that started the tracee.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	pid := cmd.Process.Pid
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, unix.WALL, nil); err != nil {
		return err
	}
	if err := unix.PtraceSetOptions(pid, unix.PTRACE_O_EXITKILL); err != nil {
		return err
	}
	// The held command's start time, as its start entry records it.
	if _, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err != nil {
		return err
	}
	l, err := lock(dir)
	if err != nil {
		return err
	}
	id, err := newLink(dir, job)
	if err != nil {
		return err
	}
	entries := append(frame(record(id, job, "claimed")), frame(record(id, job, "running"))...)
	if _, err := appendFrames(dir, job, entries); err != nil {
		return err
	}
	unix.Close(l)
	if err := unix.PtraceDetach(pid); err != nil {
		return err
	}
	if err := cmd.Wait(); err != nil {
		if _, failed := err.(*exec.ExitError); !failed {
			return err
		}
	}
	return logUpdate(dir, id, "completed")
}
