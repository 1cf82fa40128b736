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
// ("pid 123@4567 (flock)"), or "" if /proc/locks does not tell. It is
// asked only when a writer has waited a second: the hot path reads nothing
// for it.
func lockHolder(fd int) string {
	id, comm, ok := proc.FlockHolder(fd)
	switch {
	case !ok:
		return ""
	case comm == "":
		return "pid " + strconv.Itoa(id.PID)
	}
	return fmt.Sprintf("pid %s (%s)", id, comm)
}
