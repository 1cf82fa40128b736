package runner

// The terminal. A runner started in the foreground of a terminal puts its
// command in a process group of its own, which the terminal would take
// for a background job: the command could not read it (SIGTTIN stops it)
// and ^C, ^Z reach the runner instead of it. So, as tini does, the runner
// gives the command's group the terminal's foreground while it runs and
// takes it back once it has ended. The runner, then in the background,
// changes the foreground with SIGTTOU blocked: tcsetpgrp from a
// background group would stop it.
//
// Job control: ^Z stops the command's group, not the runner, and the
// caller's shell, waiting for the runner, would wait for ever with the
// terminal held by a stopped group. So when the command is stopped by
// TSTP, TTIN or TTOU, the runner takes the terminal back and stops its own
// group with the same signal, where the shell sees a stopped job; once
// continued (fg, bg), it gives the terminal back to the command's group if
// it is in the foreground again, and continues the command's group.

import (
	"errors"
	"os"
	"runtime"
	"slices"

	"golang.org/x/sys/unix"
)

// terminal is the terminal a command was given: fd is the runner's own
// descriptor of it, pgrp the runner's process group.
type terminal struct {
	fd   int
	pgrp int
	// child is the command's group once started; 0 before.
	child int
}

// foregroundTerminal returns the terminal that f (the command's stdin) is
// when the runner is in its foreground, else nil: a runner in the
// background, or with no terminal, leaves the foreground alone.
func foregroundTerminal(f *os.File) *terminal {
	fd := int(f.Fd())
	pg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	if err != nil || pg != unix.Getpgrp() {
		return nil
	}
	return &terminal{fd: fd, pgrp: pg}
}

// setForeground makes pgrp the terminal's foreground group, with SIGTTOU
// blocked on this thread.
func (t *terminal) setForeground(pgrp int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var set, old unix.Sigset_t
	set.Val[(unix.SIGTTOU-1)/64] |= 1 << ((uint(unix.SIGTTOU) - 1) % 64)
	unix.PthreadSigmask(unix.SIG_BLOCK, &set, &old)
	defer unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
	for {
		err := unix.IoctlSetPointerInt(t.fd, unix.TIOCSPGRP, pgrp)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// foreground returns the terminal's foreground group.
func (t *terminal) foreground() int {
	pg, err := unix.IoctlGetInt(t.fd, unix.TIOCGPGRP)
	if err != nil {
		return 0
	}
	return pg
}

// takeBack gives the terminal back to the runner's group if the command's
// group has it (or, before the command's start was known, any other): a
// runner the caller has since put in the background (^Z, bg) must leave
// the shell its terminal.
func (t *terminal) takeBack() {
	fg := t.foreground()
	if fg == t.pgrp || t.child != 0 && fg != t.child {
		return
	}
	t.setForeground(t.pgrp)
}

// jobStops are the stops of the command that the runner passes on to its
// own group.
var jobStops = []unix.Signal{unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU}

// jobControl passes the command's job-control stops on to the runner's
// own group, as described above, until the command (pid, its group's
// leader) is reaped. It consumes only stop reports (waitid without
// WEXITED): the reaper stays the only one to reap.
func (t *terminal) jobControl(pid int) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WSTOPPED, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return
		}
		sig := unix.Signal(siginfoStatus(&info))
		if !slices.Contains(jobStops, sig) {
			continue
		}
		t.takeBack()
		// Stops this whole process, and the caller's job with it, until
		// the shell continues it.
		unix.Kill(0, sig)
		if t.foreground() == t.pgrp {
			// fg: the command is in the foreground again, not we.
			t.setForeground(pid)
		}
		unix.Kill(-pid, unix.SIGCONT)
	}
}
