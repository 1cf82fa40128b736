package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Scanner reads /proc/PID/stat files relative to an open /proc: one openat
// and one read into a reused buffer per process, with no path string, no
// *os.File and no poller registration. A tree walk reads every process of
// the machine several times per step — thousands of them while a fork loop
// is being stopped — so this is the only way tether reads /proc stat files
// (ReadStat is a one-off Scanner read). A Scanner is not safe for
// concurrent use.
type Scanner struct {
	dir int
	// fdLimit is RLIMIT_NOFILE's soft limit when the Scanner was made:
	// OpenMember leaves descriptors below it for the reads of /proc.
	fdLimit uint64
	path    [32]byte
	// buf holds one stat line. Fields 1–22, the ones parsed, fit well
	// within it whatever the values; a longer tail is cut off unread.
	buf [1024]byte
}

// NewScanner opens /proc for a Scanner. Close releases it.
func NewScanner() (*Scanner, error) {
	fd, err := unix.Open(procRoot, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", procRoot, err)
	}
	r := &Scanner{dir: fd, fdLimit: 1 << 20}
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil {
		r.fdLimit = lim.Cur
	}
	return r, nil
}

// Close releases the Scanner's descriptor of /proc.
func (r *Scanner) Close() error { return unix.Close(r.dir) }

// Stat reads and parses the stat of pid. A missing process, or one that
// exited between the open and the read, is ErrGone.
func (r *Scanner) Stat(pid int) (Stat, error) {
	p := strconv.AppendInt(r.path[:0], int64(pid), 10)
	p = append(p, "/stat\x00"...)
	return readStat(r.dir, p, r.buf[:], pid)
}

// GroupStopped reports whether the process st describes (as r read it)
// can run no more until it is continued: it is stopped, or it is a
// thread-group leader that has exited (a zombie whose other threads still
// run: Threads > 1) and each of its other threads is stopped or has
// exited. A stop signal stops every thread of the group, but such a
// leader's own state stays Z; its threads' states say what the group does.
func (r *Scanner) GroupStopped(st Stat) (bool, error) {
	if st.Stopped() {
		return true, nil
	}
	if st.State != Zombie || st.Threads <= 1 {
		return false, nil
	}
	dir := strconv.Itoa(st.PID) + "/task"
	fd, err := unix.Openat(r.dir, dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err == unix.ENOENT || err == unix.ESRCH {
		return false, fmt.Errorf("pid %d: %w", st.PID, ErrGone)
	}
	if err != nil {
		return false, fmt.Errorf("%w: open %s/%s: %w", ErrCannotJudge, procRoot, dir, err)
	}
	f := os.NewFile(uintptr(fd), dir)
	defer f.Close()
	tids, err := f.Readdirnames(-1)
	if err != nil {
		return false, fmt.Errorf("%w: read %s/%s: %w", ErrCannotJudge, procRoot, dir, err)
	}
	for _, tid := range tids {
		if tid == strconv.Itoa(st.PID) {
			continue
		}
		p := append(append(r.path[:0], dir+"/"+tid+"/stat"...), 0)
		ts, err := readStat(r.dir, p, r.buf[:], st.PID)
		switch {
		case errors.Is(err, ErrGone):
		case err != nil:
			return false, err
		case !ts.Stopped() && ts.State != Zombie && ts.State != Dead:
			return false, nil
		}
	}
	return true, nil
}

// readStat opens path (NUL-terminated, relative to dir) and parses the stat
// line it holds into buf. pid names the process in errors.
func readStat(dir int, path []byte, buf []byte, pid int) (Stat, error) {
	// A raw openat: unix.Openat would copy the path into a new string.
	fd, _, errno := unix.Syscall6(unix.SYS_OPENAT, uintptr(dir), uintptr(unsafe.Pointer(&path[0])),
		unix.O_RDONLY|unix.O_CLOEXEC, 0, 0, 0)
	if errno != 0 {
		if errno == unix.ENOENT || errno == unix.ESRCH {
			return Stat{}, fmt.Errorf("pid %d: %w", pid, ErrGone)
		}
		return Stat{}, fmt.Errorf("%w: open %s: %w", ErrCannotJudge, bytes.TrimSuffix(path, []byte{0}), errno)
	}
	var n int
	var err error
	for {
		n, err = unix.Read(int(fd), buf)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	unix.Close(int(fd))
	if errors.Is(err, unix.ESRCH) || (err == nil && n == 0) {
		return Stat{}, fmt.Errorf("pid %d: %w", pid, ErrGone) // exited between open and read
	}
	if err != nil {
		return Stat{}, fmt.Errorf("%w: read %s: %w", ErrCannotJudge, bytes.TrimSuffix(path, []byte{0}), err)
	}
	return ParseStat(buf[:n])
}

// Snapshot is one pass over /proc: the stat of every process that could
// be read, and the children of each PID by their PPID links. It is no
// atomic picture: processes are read one by one, and one that forks or
// exits meanwhile may be seen before or after.
type Snapshot struct {
	stats map[int]Stat
	kids  map[int][]int
	// unreadable are the PIDs listed whose stat could not be read for a
	// reason other than their exit (EMFILE when descriptors ran out, EACCES,
	// EIO): the snapshot cannot tell what they are, or whether they run.
	unreadable map[int]error
}

// Unreadable returns the PIDs the snapshot listed but could not read, with
// why: processes it cannot judge. Empty when every one was read.
func (s *Snapshot) Unreadable() map[int]error { return s.unreadable }

// Stat returns the stat of pid as the snapshot saw it.
func (s *Snapshot) Stat(pid int) (Stat, bool) {
	st, ok := s.stats[pid]
	return st, ok
}

// Children returns the PIDs whose PPID was pid, in /proc order.
func (s *Snapshot) Children(pid int) []int { return s.kids[pid] }

// Snapshot reads every process in /proc.
func (r *Scanner) Snapshot() (*Snapshot, error) {
	s := &Snapshot{stats: make(map[int]Stat, 512), kids: make(map[int][]int, 512)}
	err := r.each(func(st Stat) {
		s.stats[st.PID] = st
		s.kids[st.PPID] = append(s.kids[st.PPID], st.PID)
	}, func(pid int, err error) {
		if s.unreadable == nil {
			s.unreadable = map[int]error{}
		}
		s.unreadable[pid] = err
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// each calls fn for every process in /proc whose stat could be read, and
// unreadable for every one whose stat could not be read for a reason other
// than its exit; processes that vanish during the scan are skipped. Only
// "no such process" means gone: a read that fails with EMFILE says nothing
// about the process.
func (r *Scanner) each(fn func(Stat), unreadable func(pid int, err error)) error {
	// The directory offset is rewound so that one Scanner serves many scans.
	if _, err := unix.Seek(r.dir, 0, 0); err != nil {
		return fmt.Errorf("rewind %s: %w", procRoot, err)
	}
	var dents [32 << 10]byte
	err := eachNumber(r.dir, dents[:], func(pid int) {
		st, err := r.Stat(pid)
		switch {
		case err == nil:
			fn(st)
		case errors.Is(err, ErrGone):
			// Gone since the listing.
		default:
			unreadable(pid, err)
		}
	})
	if err != nil {
		return fmt.Errorf("read %s: %w", procRoot, err)
	}
	return nil
}

// eachNumber calls fn with every positive number that names an entry of
// the directory open as fd (the PIDs of /proc, the thread ids of a task
// directory), from its current offset on, reading the entries into dents.
func eachNumber(fd int, dents []byte, fn func(int)) error {
	for {
		n, err := unix.Getdents(fd, dents)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		if n <= 0 {
			return nil
		}
		for off := 0; off < n; {
			// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name.
			reclen := int(*(*uint16)(unsafe.Pointer(&dents[off+16])))
			name := dents[off+19 : off+reclen]
			off += reclen
			if len(name) == 0 || name[0] < '1' || name[0] > '9' {
				continue
			}
			if z := bytes.IndexByte(name, 0); z >= 0 {
				name = name[:z]
			}
			if id, ok := atoi(name); ok && id > 0 {
				fn(id)
			}
		}
	}
}

// Scan calls fn for every process in /proc whose stat could be read.
// Processes that vanish during the scan are skipped. Processes that could
// not be read for another reason are skipped too, and then the error, once
// every readable one was passed to fn, is an *UnreadableError: the scan
// cannot tell whether they are what the caller looks for.
func Scan(fn func(Stat)) error {
	r, err := NewScanner()
	if err != nil {
		return err
	}
	defer r.Close()
	var bad UnreadableError
	err = r.each(fn, func(pid int, err error) {
		bad.PIDs = append(bad.PIDs, pid)
		if bad.Err == nil {
			bad.Err = err
		}
	})
	if err == nil && len(bad.PIDs) > 0 {
		return &bad
	}
	return err
}

// Children returns the children of pid, zombies included: from
// /proc/PID/task/*/children where the kernel has it
// (CONFIG_PROC_CHILDREN), else from a scan of /proc.
func Children(pid int) ([]ID, error) {
	// Raw system calls, not os.ReadDir and os.ReadFile: a runner asks this
	// at every start, and each os.File costs five more calls (the poller's
	// registration, refused for a /proc file) and a first run of their code.
	dir := procRoot + "/" + strconv.Itoa(pid) + "/task"
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ENOENT || err == unix.ESRCH {
			return nil, fmt.Errorf("pid %d: %w", pid, ErrGone)
		}
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	var tids []int
	var dents [1024]byte
	err = eachNumber(fd, dents[:], func(tid int) { tids = append(tids, tid) })
	unix.Close(fd)
	if err != nil {
		return nil, &os.PathError{Op: "read", Path: dir, Err: err}
	}
	var pids []int
	buf := make([]byte, 0, 512)
	for i, tid := range tids {
		b, err := readAll(dir+"/"+strconv.Itoa(tid)+"/children", buf[:0])
		if err == unix.ENOENT && i == 0 {
			return scanChildren(pid)
		}
		if err != nil {
			continue // a thread that exited meanwhile
		}
		buf = b
		for _, f := range bytes.Fields(b) {
			if c, ok := atoi(f); ok {
				pids = append(pids, c)
			}
		}
	}
	ids := make([]ID, 0, len(pids))
	var bad UnreadableError
	for _, c := range pids {
		st, err := ReadStat(c)
		switch {
		case err == nil && st.PPID == pid:
			ids = append(ids, ID{PID: c, Start: st.Start})
		case err != nil && !errors.Is(err, ErrGone):
			bad.PIDs = append(bad.PIDs, c)
			bad.Err = err
		}
	}
	if len(bad.PIDs) > 0 {
		return ids, &bad
	}
	return ids, nil
}

// readAll appends the whole file at path to buf.
func readAll(path string, buf []byte) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return buf, err
	}
	defer unix.Close(fd)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return buf, err
		case n == 0:
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// scanChildren is Children from a scan of /proc.
func scanChildren(pid int) ([]ID, error) {
	var ids []ID
	err := Scan(func(st Stat) {
		if st.PPID == pid {
			ids = append(ids, ID{PID: st.PID, Start: st.Start})
		}
	})
	return ids, err
}
