package filestore

import (
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/proc"
)

// oPath opens a folder on the way to the store only to walk through it.
const oPath = unix.O_PATH

// lockHolder names the process holding a flock on the file open as fd
// ("pid 123@4567 (flock)"), or "" if /proc/locks does not tell; where
// the process that took the lock no longer has the file open, it names
// that PID only as the one that passed the lock on. It is
// asked only when a writer has waited a second: the hot path reads nothing
// for it.
func lockHolder(fd int) string {
	id, comm, ok := proc.FlockHolder(fd)
	switch {
	case !ok && id.PID != 0:
		// Never name a PID that may be another process's by now.
		return fmt.Sprintf("a process that pid %d passed its lock to (pid %d took the lock and no longer has the file open)", id.PID, id.PID)
	case !ok:
		return ""
	case comm == "":
		return "pid " + strconv.Itoa(id.PID)
	}
	return fmt.Sprintf("pid %s (%s)", id, comm)
}
