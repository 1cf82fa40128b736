package scripttest

import (
	"time"

	"golang.org/x/sys/unix"
)

// startedAt turns a start time in clock ticks since boot into wall time.
func startedAt(start uint64) time.Time {
	var boot, real unix.Timespec
	unix.ClockGettime(unix.CLOCK_BOOTTIME, &boot)
	unix.ClockGettime(unix.CLOCK_REALTIME, &real)
	bootedAt := time.Unix(real.Unix()).Add(-time.Duration(boot.Nano()))
	return bootedAt.Add(time.Duration(start) * tick)
}

// ended reports whether child pid has exited, leaving it unreaped.
func ended(pid int) bool {
	// WNOWAIT: look, but leave the zombie to the caller's cleanup. With
	// WNOHANG and no ended child, Linux leaves info zeroed.
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	return err == nil && info.Signo == int32(unix.SIGCHLD)
}
