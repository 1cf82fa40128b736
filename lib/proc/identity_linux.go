package proc

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// procRoot is where /proc is mounted.
const procRoot = "/proc"

// ReadStat reads and parses /proc/PID/stat. A missing process is ErrGone.
func ReadStat(pid int) (Stat, error) {
	if pid < 1 || pid > MaxPID {
		return Stat{}, fmt.Errorf("%w: %d", ErrBadID, pid)
	}
	var path [32]byte
	p := append(path[:0], procRoot+"/"...)
	p = strconv.AppendInt(p, int64(pid), 10)
	p = append(p, "/stat\x00"...)
	var buf [1024]byte
	return readStat(unix.AT_FDCWD, p, buf[:], pid)
}

// Lookup returns the current identity of pid, or ErrGone if no process has
// that PID or it has already exited.
func Lookup(pid int) (ID, error) {
	st, err := ReadStat(pid)
	if err != nil {
		return ID{}, err
	}
	if st.Exited() {
		return ID{}, fmt.Errorf("pid %d: %w", pid, ErrGone)
	}
	return ID{PID: pid, Start: st.Start}, nil
}

// IsThread reports whether pid names a thread that does not lead its
// thread group: /proc shows it, but it is no process (pidfd_open refuses
// it: EINVAL before Linux 6.9, ENOENT since). False where that cannot be
// told (no pidfd).
func IsThread(pid int) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err == nil {
		unix.Close(fd)
		return false
	}
	return errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT)
}

// Self returns the identity of the calling process.
func Self() ID {
	id, err := Lookup(os.Getpid())
	if err != nil {
		return ID{PID: os.Getpid()}
	}
	return id
}

// Alive reports whether the process id names still exists and has at least
// one running thread. A different start time means a different process, so
// not alive. Errors other than "gone" (e.g. an unreadable /proc) are returned.
func Alive(id ID) (bool, error) {
	st, err := ReadStat(id.PID)
	if errors.Is(err, ErrGone) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if id.Start != 0 && st.Start != id.Start {
		return false, nil
	}
	return !st.Exited(), nil
}

// BootID returns this boot's random id from /proc/sys/kernel/random/boot_id.
// It reads with raw system calls: an os.File would start the runtime's
// network poller, which a ledger call that opens no pipe never needs.
func BootID() (string, error) {
	const path = procRoot + "/sys/kernel/random/boot_id"
	var buf [64]byte
	b, err := readAll(path, buf[:0])
	if err != nil {
		return "", &os.PathError{Op: "read", Path: path, Err: err}
	}
	return strings.TrimSpace(string(b)), nil
}

// checkSafePID refuses the PIDs tether never signals: 1 and below, and the
// calling process itself.
func checkSafePID(pid int) error {
	if pid <= 1 {
		return fmt.Errorf("%w pid %d", ErrUnsafe, pid)
	}
	if pid == os.Getpid() {
		return fmt.Errorf("%w pid %d: it is this process", ErrUnsafe, pid)
	}
	return nil
}

// CheckTarget refuses a PID that must never be signalled (≤ 1, or the
// calling process). A plain PID in the caller's own group or session is
// allowed: that is how a wrapper stops its own background helper.
func CheckTarget(pid int) error { return checkSafePID(pid) }
