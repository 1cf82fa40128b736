package stop

import (
	"bytes"
	"errors"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The tree walk reads every /proc/PID/stat several times per step, with
// thousands of processes when a fork loop is being stopped; proc.Scan's
// general-purpose path (a path string, os.ReadFile, the command name kept)
// costs several times more per process than this one: openat relative to
// an open /proc, one read into a reused buffer, and only the fields the
// walk needs.

// pstat is the part of /proc/PID/stat the walk uses.
type pstat struct {
	state   byte
	ppid    int
	threads int
	start   uint64
}

// exited mirrors proc.Stat.Exited: a zombie whose threads have all exited.
func (s pstat) exited() bool { return (s.state == 'Z' || s.state == 'X') && s.threads <= 1 }

// stopped mirrors proc.Stat.Stopped.
func (s pstat) stopped() bool { return s.state == 'T' || s.state == 't' }

// snapshot is one pass over /proc.
type snapshot struct {
	stats map[int]pstat
	kids  map[int][]int
}

// statReader reads /proc/PID/stat files relative to an open /proc.
type statReader struct {
	dir  int
	path [32]byte
	buf  [1024]byte
}

func newStatReader() (*statReader, error) {
	fd, err := unix.Open("/proc", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return &statReader{dir: fd}, nil
}

func (r *statReader) close() { unix.Close(r.dir) }

var errNoProcess = errors.New("no such process")

// read returns the stat of pid, or errNoProcess when it does not exist.
func (r *statReader) read(pid int) (pstat, error) {
	p := strconv.AppendInt(r.path[:0], int64(pid), 10)
	p = append(p, "/stat\x00"...)
	fd, _, errno := unix.Syscall6(unix.SYS_OPENAT, uintptr(r.dir), uintptr(unsafe.Pointer(&p[0])),
		unix.O_RDONLY|unix.O_CLOEXEC, 0, 0, 0)
	if errno != 0 {
		return pstat{}, errNoProcess
	}
	n, err := unix.Read(int(fd), r.buf[:])
	unix.Close(int(fd))
	if err != nil || n <= 0 {
		return pstat{}, errNoProcess // it exited between open and read
	}
	return parsePstat(r.buf[:n])
}

var errStat = errors.New("malformed /proc stat line")

// parsePstat picks fields 3, 4, 20 and 22 from a stat line. The command
// name ends at the last ")", so a name with spaces cannot shift them.
func parsePstat(b []byte) (pstat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return pstat{}, errStat
	}
	var s pstat
	field := 3
	for j := i + 1; j < len(b) && field <= 22; {
		for j < len(b) && b[j] == ' ' {
			j++
		}
		k := j
		for k < len(b) && b[k] != ' ' && b[k] != '\n' {
			k++
		}
		if k == j {
			break
		}
		tok := b[j:k]
		switch field {
		case 3:
			s.state = tok[0]
		case 4:
			s.ppid = atoi(tok)
		case 20:
			s.threads = atoi(tok)
		case 22:
			s.start = uint64(atoi(tok))
		}
		field++
		j = k
	}
	if field <= 22 {
		return pstat{}, errStat
	}
	return s, nil
}

func atoi(b []byte) int {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// snapshot reads every process in /proc.
func (r *statReader) snapshot() (*snapshot, error) {
	s := &snapshot{stats: make(map[int]pstat, 512), kids: make(map[int][]int, 512)}
	// The directory offset is rewound so that one reader serves many scans.
	if _, err := unix.Seek(r.dir, 0, 0); err != nil {
		return nil, err
	}
	var dents [32 << 10]byte
	for {
		n, err := unix.Getdents(r.dir, dents[:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return s, nil
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
			pid := atoi(name)
			if pid <= 0 {
				continue
			}
			st, err := r.read(pid)
			if err != nil {
				continue // gone since the listing
			}
			s.stats[pid] = st
			s.kids[st.ppid] = append(s.kids[st.ppid], pid)
		}
	}
}
