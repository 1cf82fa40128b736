package ledger

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/proc"
)

// randomBytes fills b from getrandom(2), reporting false if it could not
// (kernels older than 3.17). getrandom directly: crypto/rand's FIPS
// machinery costs a noticeable share of a short-lived process's start-up.
func randomBytes(b []byte) bool {
	n, err := unix.Getrandom(b, 0)
	return err == nil && n == len(b)
}

// oPath opens a folder on the way to the store only to walk through it.
const oPath = unix.O_PATH

// lockHolder names the process holding a flock on the file open as fd, as
// /proc/locks tells ("pid 123@4567 (flock)"), or "" if it does not (the
// holder is in another PID namespace, or the file is not found there).
// /proc/locks is read only when a writer has waited a second: the hot path
// writes nothing for it.
func lockHolder(fd int) string {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return ""
	}
	key := fmt.Sprintf("%02x:%02x:%d", unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)), st.Ino)
	f, err := os.Open("/proc/locks")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; waiters
		// have "->" after the number.
		f := strings.Fields(sc.Text())
		if len(f) < 6 || f[1] != "FLOCK" || f[5] != key {
			continue
		}
		pid, err := strconv.Atoi(f[4])
		if err != nil || pid <= 0 {
			return ""
		}
		st, err := proc.ReadStat(pid)
		if err != nil {
			return "pid " + f[4]
		}
		return fmt.Sprintf("pid %s (%s)", proc.ID{PID: pid, Start: st.Start}, st.Comm)
	}
	return ""
}
