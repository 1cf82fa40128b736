package proc

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// procNS caches CheckProcNS: which PID namespace /proc belongs to does not
// change during a process's life (tether never remounts it).
var procNS = sync.OnceValue(func() error { return checkProcSelf(procRoot, os.Getpid()) })

// CheckProcNS reports whether /proc belongs to this process's PID
// namespace: nil if it does, an error wrapping ErrForeignProc if it does
// not (/proc/self names another PID than getpid(2), or is missing because
// this process is not in the namespace /proc was mounted for, as inside
// `unshare --pid --fork` without --mount-proc). Through such a /proc,
// /proc/N/stat describes some other process, so a tool must neither judge
// nor signal a process by it. The answer is computed once per process.
func CheckProcNS() error { return procNS() }

// checkProcSelf is CheckProcNS for the /proc mounted at root, as seen by
// process pid.
func checkProcSelf(root string, pid int) error {
	target, err := os.Readlink(root + "/self")
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w (%s/self is missing: it was mounted for another namespace, or not at all): refusing to judge processes through it", ErrForeignProc, root)
	}
	if err != nil {
		return fmt.Errorf("%w (%s/self: %v): refusing to judge processes through it", ErrForeignProc, root, UnwrapPath(err))
	}
	if target != strconv.Itoa(pid) {
		return fmt.Errorf("%w (%s/self is %s, not %d: it was mounted for another namespace): refusing to judge processes through it", ErrForeignProc, root, target, pid)
	}
	return nil
}

// pidNS caches PIDNamespace: a process never changes its own PID namespace
// (setns(2) and unshare(2) change only that of its future children).
var pidNS = sync.OnceValues(func() (uint64, error) { return nsInode(procRoot + "/self/ns/pid") })

// PIDNamespace returns the inode number of this process's PID namespace
// (/proc/self/ns/pid): the namespace its PIDs, and those it reads in its
// /proc, are numbers of. Two processes on one boot with the same number
// see the same PIDs. The answer is read once per process.
func PIDNamespace() (uint64, error) { return pidNS() }

// nsInode returns the inode of the namespace file path.
func nsInode(path string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Ino == 0 {
		return 0, fmt.Errorf("%s: inode 0", path)
	}
	return st.Ino, nil
}

// initPIDNamespace is the inode of the initial PID namespace
// (PROC_PID_INIT_INO in the kernel's proc_ns.h), the same on every boot.
const initPIDNamespace = 0xEFFFFFFC

// errNotInitNS is PIDNamespaceGone's answer outside the initial namespace.
var errNotInitNS = errors.New("only the initial PID namespace sees every process")

// PIDNamespaceGone reports whether the PID namespace numbered ns (an inode
// of this boot, as PIDNamespace returns it) has no process left, so every
// process that was in it is gone; its PIDs are then dead wherever they
// were recorded. It can tell only from the initial PID namespace, which
// sees every process of the machine: elsewhere, or when a process's
// namespace cannot be read (another user's, without privilege), it returns
// an error. A namespace whose processes all exited never gets new ones.
// An inode the kernel gave to a later namespace reads as not gone: the
// answer errs only towards "still there".
func PIDNamespaceGone(ns uint64) (bool, error) {
	if err := CheckProcNS(); err != nil {
		return false, err
	}
	here, err := PIDNamespace()
	if err != nil {
		return false, err
	}
	if here != initPIDNamespace {
		return false, errNotInitNS
	}
	if ns == here {
		return false, nil
	}
	return pidNamespaceGone(procRoot, ns)
}

// pidNamespaceGone scans the /proc mounted at root, the initial PID
// namespace's, for a process of ns, another namespace.
func pidNamespaceGone(root string, ns uint64) (bool, error) {
	d, err := os.Open(root)
	if err != nil {
		return false, err
	}
	defer d.Close()
	want := "pid:[" + strconv.FormatUint(ns, 10) + "]"
	for {
		names, rerr := d.Readdirnames(512)
		for _, n := range names {
			// PID 1 of the initial namespace is that namespace's init,
			// in no other (and its link may be closed even to root).
			if n[0] < '0' || n[0] > '9' || n == "1" {
				continue
			}
			link, err := os.Readlink(root + "/" + n + "/ns/pid")
			switch {
			case err == nil && link == want:
				// A zombie keeps its link, but nothing runs in it.
				b, err := os.ReadFile(root + "/" + n + "/stat")
				if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) {
					continue
				}
				if st, perr := ParseStat(b); err == nil && perr == nil && st.Exited() {
					continue
				}
				return false, nil
			case err == nil, errors.Is(err, fs.ErrNotExist), errors.Is(err, unix.ESRCH):
				// another namespace's, or exited meanwhile
			default:
				return false, fmt.Errorf("PID namespace of pid %s: %w", n, UnwrapPath(err))
			}
		}
		if rerr == io.EOF {
			return true, nil
		}
		if rerr != nil {
			return false, rerr
		}
	}
}
