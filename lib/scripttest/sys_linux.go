package scripttest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// scenarioCmdline returns pid's command line, its arguments joined by
// spaces as pgrep -f matches them, and whether pid belongs to the scenario
// whose work folder is work: its environment (as it was at its exec) holds
// WORK=work, as testscript gives every command it starts and a child
// inherits, or its working directory is work or below it, for a process
// started with an environment of its own. A process of another user is
// unreadable, so never the scenario's.
func scenarioCmdline(pid int, work string) (string, bool) {
	if work == "" {
		return "", false
	}
	dir := "/proc/" + strconv.Itoa(pid)
	mine := false
	if env, err := os.ReadFile(dir + "/environ"); err == nil {
		for _, kv := range bytes.Split(env, []byte{0}) {
			if string(kv) == "WORK="+work {
				mine = true
				break
			}
		}
	}
	if !mine {
		cwd, err := os.Readlink(dir + "/cwd")
		mine = err == nil && (cwd == work || strings.HasPrefix(cwd, work+string(filepath.Separator)))
	}
	if !mine {
		return "", false
	}
	line, err := os.ReadFile(dir + "/cmdline")
	if err != nil || len(line) == 0 {
		return "", false
	}
	return string(bytes.ReplaceAll(bytes.TrimRight(line, "\x00"), []byte{0}, []byte{' '})), true
}
