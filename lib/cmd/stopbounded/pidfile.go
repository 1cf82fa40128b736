package stopbounded

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/tether-sh/tether/lib/exit"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/proc"
)

// pidfileMax bounds what is read from a pidfile: PID@START fits in 32
// bytes, and a pidfile is never more than a line.
const pidfileMax = 4096

// errUnsafePidfile is wrapped by the refusal of a pidfile that another
// user could have written: as root, acting on it would let that user
// choose which process root signals.
var errUnsafePidfile = errors.New("refusing a pidfile another user can write")

// pidfileExit is the exit code for a pidfile that could not be used: a
// file we may not read, an I/O error, or one another user can write (as
// root) is a system error (3); a missing, empty, garbled, oversized one,
// or one that is not a regular file, is bad input (2).
func pidfileExit(err error) int {
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EIO) || errors.Is(err, errUnsafePidfile) {
		return exit.System
	}
	return exit.Usage
}

// readPidfile returns the single PID[@START] token in file f. The file
// must be a small regular file: it is opened without following a symlink
// or blocking (a FIFO with no writer, a device), checked by fstat, and at
// most pidfileMax bytes are read. As root, a pidfile owned by another
// user, or writable by its group or others, is refused, as
// start-stop-daemon does.
func readPidfile(f string) (string, error) {
	fd, err := unix.Open(f, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return "", fmt.Errorf("pidfile %s is a symbolic link; refusing to follow it", f)
		}
		return "", fmt.Errorf("pidfile %s: %w", f, err)
	}
	file := os.NewFile(uintptr(fd), f)
	defer file.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", fmt.Errorf("pidfile %s: %w", f, err)
	}
	if kind := uint32(st.Mode) & unix.S_IFMT; kind != unix.S_IFREG {
		return "", fmt.Errorf("pidfile %s is not a regular file (%s)", f, fileKind(kind))
	}
	if err := checkPidfileOwner(f, os.Geteuid(), st.Uid, uint32(st.Mode)); err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.LimitReader(file, pidfileMax+1))
	if err != nil {
		return "", fmt.Errorf("pidfile %s: %w", f, errors.Unwrap(err))
	}
	if len(b) > pidfileMax {
		return "", fmt.Errorf("pidfile %s is larger than %d bytes; want one PID", f, pidfileMax)
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return "", fmt.Errorf("pidfile %s is empty", f)
	}
	if len(fields) > 1 {
		return "", fmt.Errorf("pidfile %s holds %d words; want one PID", f, len(fields))
	}
	if _, err := proc.ParseID(fields[0]); err != nil {
		return "", fmt.Errorf("pidfile %s: %w", f, err)
	}
	return fields[0], nil
}

// checkPidfileOwner refuses, when the caller is root (euid 0), a pidfile
// whose owner is neither root nor the caller, or that its group or others
// may write. Any other caller can only signal its own processes, so it
// trusts what it can read.
func checkPidfileOwner(f string, euid int, uid, mode uint32) error {
	if euid != 0 {
		return nil
	}
	if uid != 0 && int(uid) != euid {
		return fmt.Errorf("%w: %s is owned by uid %d", errUnsafePidfile, f, uid)
	}
	if mode&0o022 != 0 {
		return fmt.Errorf("%w: %s is writable by its group or others (mode %04o)", errUnsafePidfile, f, mode&0o7777)
	}
	return nil
}

// fileKind names a file type for the refusal of a pidfile.
func fileKind(kind uint32) string {
	switch kind {
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	case unix.S_IFSOCK:
		return "a socket"
	}
	return fmt.Sprintf("type %#o", kind)
}
