package proc

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// FlockHolder names the process holding a flock on the file open as fd,
// as /proc/locks tells, with its command name. ok is false when /proc/locks
// does not tell (the holder is in another PID namespace, or the file is
// not found there). It reads all of /proc/locks: call it off the hot path.
func FlockHolder(fd int) (holder ID, comm string, ok bool) {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return ID{}, "", false
	}
	key := fmt.Sprintf("%02x:%02x:%d", unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)), st.Ino)
	f, err := os.Open(procRoot + "/locks")
	if err != nil {
		return ID{}, "", false
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
			return ID{}, "", false
		}
		st, err := ReadStat(pid)
		if err != nil {
			return ID{PID: pid}, "", true
		}
		return ID{PID: pid, Start: st.Start}, st.Comm, true
	}
	return ID{}, "", false
}

// SelfStat is this process's own /proc/self/stat: inside a new PID
// namespace that still mounts its parent's /proc, it names the process as
// that /proc does, which os.Getpid does not.
func SelfStat() (Stat, error) {
	b, err := os.ReadFile(procRoot + "/self/stat")
	if err != nil {
		return Stat{}, err
	}
	return ParseStat(b)
}

// NamespaceOf returns the PID namespace of process pid as its
// /proc/PID/ns/pid link reads ("pid:[4026531836]").
func NamespaceOf(pid int) (string, error) {
	return os.Readlink(procRoot + "/" + strconv.Itoa(pid) + "/ns/pid")
}

// HoldsPidfd reports whether process pid has a pidfd open.
func HoldsPidfd(pid int) bool {
	dir := procRoot + "/" + strconv.Itoa(pid) + "/fd/"
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, fd := range fds {
		if l, err := os.Readlink(dir + fd.Name()); err == nil && l == "anon_inode:[pidfd]" {
			return true
		}
	}
	return false
}
