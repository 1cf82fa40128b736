package proc

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// FlockHolder names the process holding a flock on the file open as fd,
// as /proc/locks tells, with its command name. ok is false when /proc/locks
// does not tell (the holder is in another PID namespace, or the file is
// not found there), and when the process it names is not the holder: a
// flock belongs to an open file description, and /proc/locks names the
// process that took it, which may have exited since and left the
// description to another (`exec 9>f; flock 9; cmd`), and its PID to anyone.
// A named process is taken for the holder only while it has the file
// open, where its descriptors can be read (without privilege, another
// user's cannot: that one is taken on /proc/locks' word). When ok is false
// holder.PID is still the PID /proc/locks named, if any. It reads all of
// /proc/locks: call it off the hot path.
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
		ps, err := ReadStat(pid)
		if err != nil || !hasOpen(pid, uint64(st.Dev), uint64(st.Ino)) {
			return ID{PID: pid}, "", false
		}
		return ID{PID: pid, Start: ps.Start}, ps.Comm, true
	}
	return ID{}, "", false
}

// hasOpen reports whether process pid has the file dev:ino open, or its
// descriptors cannot be read (true: it is not known not to).
func hasOpen(pid int, dev, ino uint64) bool {
	dir := procRoot + "/" + strconv.Itoa(pid) + "/fd"
	names, err := readDirNames(dir)
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	for _, n := range names {
		var st unix.Stat_t
		if unix.Stat(dir+"/"+n, &st) == nil && uint64(st.Dev) == dev && uint64(st.Ino) == ino {
			return true
		}
	}
	return false
}

// readDirNames lists a directory's names.
func readDirNames(dir string) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
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
