package filestore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/internal/durable"
	"github.com/tether-sh/tether/lib/ledger"
)

// A job's log, jobs/JOB/log: every version of every execution of the job,
// appended under the store's lock, each as one frame:
//
//	magic   u32 "TLG1"          (little endian, as every number here)
//	n       u32                 length of the body
//	crc     u32                 CRC-32C of the body
//	body    n bytes             kind (1 byte), id (its length, 1 byte, then
//	                            the id), ref (u64), payload
//	n       u32                 the length again, so the log can be walked back
//
// The first frame is the header (kind 'H', ref the log's generation, the
// payload the summary of what prune removed: see "Summaries"); then each
// claim is a 'C' frame holding the record whole (Record.Encode), and each
// later version a 'U' frame whose ref is the offset of the execution's 'C'
// frame and whose payload is that version as a delta against it
// (Record.EncodeDelta), a fraction of its size. A version is never
// rewritten; prune writes a new generation (Prune).
//
// A frame is appended with one pwrite and one fdatasync: a crash leaves
// at most the last frame torn, which no reader takes (its length, trailer
// or CRC is wrong) and the next writer truncates. A frame that is not
// valid with a valid one after it is damage, not a torn tail: readers
// report it (ledger.ErrCorrupt) and writers refuse to append after it.
const (
	logName     = "_log"
	frameMagic  = 0x31474c54 // "TLG1"
	frameHead   = 12
	frameTail   = 4
	bodyHead    = 1 + 1 + 8 // and the id
	maxBody     = bodyHead + 255 + 2*ledger.MaxRecordSize
	kindHeader  = 'H'
	kindClaim   = 'C'
	kindUpdate  = 'U'
	logReadSize = 64 << 10
)

// errFrame is a frame that is not valid where one was expected.
var errFrame = errors.New("no valid frame")

// entry is one frame of a log.
type entry struct {
	off, end int64 // where the frame starts and where the next one does
	kind     byte
	id       []byte // valid, as data, until the next read of the log
	ref      int64  // 'U': the offset of the claim's frame; 'H': the generation
	data     []byte // the payload
}

// frame encodes one frame.
func frame(kind byte, id string, ref int64, payload []byte) []byte {
	n := bodyHead + len(id) + len(payload)
	b := make([]byte, frameHead+n+frameTail)
	binary.LittleEndian.PutUint32(b, frameMagic)
	binary.LittleEndian.PutUint32(b[4:], uint32(n))
	body := b[frameHead : frameHead+n]
	body[0] = kind
	body[1] = byte(len(id))
	copy(body[2:], id)
	binary.LittleEndian.PutUint64(body[2+len(id):], uint64(ref))
	copy(body[bodyHead+len(id):], payload)
	binary.LittleEndian.PutUint32(b[8:], checksum(body))
	binary.LittleEndian.PutUint32(b[frameHead+n:], uint32(n))
	return b
}

// parseFrame reads the frame at the start of b (found at offset off).
// need > 0 says b is too short: the frame needs that many bytes.
func parseFrame(b []byte, off int64) (e entry, need int, err error) {
	if len(b) < frameHead {
		return e, frameHead, nil
	}
	if binary.LittleEndian.Uint32(b) != frameMagic {
		return e, 0, errFrame
	}
	n := int(binary.LittleEndian.Uint32(b[4:]))
	if n < bodyHead || n > maxBody {
		return e, 0, errFrame
	}
	size := frameHead + n + frameTail
	if len(b) < size {
		return e, size, nil
	}
	body := b[frameHead : frameHead+n]
	if binary.LittleEndian.Uint32(b[frameHead+n:]) != uint32(n) || checksum(body) != binary.LittleEndian.Uint32(b[8:]) {
		return e, 0, errFrame
	}
	k := int(body[1])
	if bodyHead+k > n {
		return e, 0, errFrame
	}
	e = entry{off: off, end: off + int64(size), kind: body[0], id: body[2 : 2+k],
		ref: int64(binary.LittleEndian.Uint64(body[2+k:])), data: body[bodyHead+k:]}
	switch e.kind {
	case kindHeader, kindClaim, kindUpdate:
		return e, 0, nil
	}
	return entry{}, 0, errFrame
}

// jobLog is one job's log, open.
type jobLog struct {
	fd   int
	path string
	gen  int64
	ino  uint64 // its inode: a new one for each generation (and copy)
	// first is where the first frame after the header starts; end is
	// where the next frame is appended (a writer's, found by validEnd) or
	// the size when opened (a reader's).
	first, end int64
	base       *jobSummary // the header's, what prune removed: nil for none
	buf        []byte
	// ahead, set by walks that only read (Each, Prune's old log), keeps
	// what readAt read in a window, up to ahead bytes: the next frames
	// they ask for are mostly just after the last.
	ahead int
	win   *window
	claim []byte // fromBytes' copy of a claim
	// lend, when set, lends the log its buffers (buf, the window, claim)
	// while it reads: a read of many logs at once (Each) holds one set.
	lend *lender
}

// openLog opens job's log in its directory jd: for appending (write, under
// the lock: its valid end found, a torn tail truncated, a copy made first
// if it has another link) or for reading. A missing log is
// os.ErrNotExist.
func openLog(jd dirh, job string, write bool) (*jobLog, error) {
	return openLogLent(jd, job, write, nil)
}

// openLogLent is openLog reading through lend's buffers (nil: its own).
func openLogLent(jd dirh, job string, write bool, lend *lender) (*jobLog, error) {
	flags := unix.O_RDONLY
	if write {
		flags = unix.O_RDWR
	}
	path := jd.Show(logName)
	fd, err := unix.Openat(jd.FD, logName, flags|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ELOOP {
			return nil, fmt.Errorf("%w: %s is a symbolic link", ledger.ErrCorrupt, path)
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	l := &jobLog{fd: fd, path: path, lend: lend}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		l.close()
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		l.close()
		return nil, fmt.Errorf("%w: %s is not a regular file", ledger.ErrCorrupt, path)
	}
	if err := checkOwnedIn(jd, path, &st); err != nil {
		l.close()
		return nil, err
	}
	l.end, l.ino = st.Size, st.Ino
	h, err := l.readAt(0)
	if err == nil && h.kind != kindHeader {
		err = errFrame
	}
	if err == nil {
		l.gen, l.first = h.ref, h.end
		var base jobSummary
		if base, err = decodeSummary(h.data, job); !base.empty() {
			l.base = &base
		}
	}
	if err != nil {
		l.close()
		return nil, l.corrupt(0, err)
	}
	if !write {
		return l, nil
	}
	if st.Nlink > 1 {
		// A hard link made by someone else (a snapshot) is never written
		// through: the log is copied and the copy takes its name.
		if err := l.detach(jd, job); err != nil {
			l.close()
			return nil, err
		}
	}
	if l.end, err = l.validEnd(); err != nil {
		l.close()
		return nil, err
	}
	return l, nil
}

// removed is what prune removed from the log, as its header counts it.
func (l *jobLog) removed() jobSummary {
	if l.base == nil {
		return jobSummary{}
	}
	return *l.base
}

func (l *jobLog) close() {
	if l.fd >= 0 {
		unix.Close(l.fd)
		l.fd = -1
	}
}

// corrupt is err, a frame of l at off that could not be read, as the
// error a caller reports.
func (l *jobLog) corrupt(off int64, err error) error {
	if errors.Is(err, errFrame) {
		return fmt.Errorf("%w: %s: no valid frame at offset %d", ledger.ErrCorrupt, l.path, off)
	}
	var pe *os.PathError
	if errors.As(err, &pe) || errors.Is(err, ledger.ErrCorrupt) {
		return fmt.Errorf("%s: %w", l.path, err)
	}
	return fmt.Errorf("reading %s: %w", l.path, err)
}

// pread fills b from offset off; short only at the end of the file.
func (l *jobLog) pread(b []byte, off int64) (int, error) {
	n, err := preadAt(l.fd, b, off)
	if err != nil {
		return n, &os.PathError{Op: "read", Path: l.path, Err: err}
	}
	return n, nil
}

// readAt reads the frame at off (errFrame when there is none).
func (l *jobLog) readAt(off int64) (entry, error) {
	if l.ahead > 0 {
		return l.readAhead(off)
	}
	buf := &l.buf
	if l.lend != nil {
		buf = &l.lend.buf
	}
	if cap(*buf) < 4096 {
		*buf = make([]byte, 4096)
	}
	b := (*buf)[:4096]
	for {
		e, need, n, err := l.frameIn(b, off)
		if err != nil || need == 0 {
			return e, err
		}
		if n < len(b) || need <= len(b) {
			return entry{}, errFrame // the file ends before the frame does
		}
		*buf = make([]byte, need)
		b = *buf
	}
}

// frameIn reads into b from off and parses the frame there: need is how
// many bytes the frame takes when b (n of them read) does not hold it
// whole. One read, mostly: a frame near the end of the file would cost
// preadAt a second read to find the end. Only when that one read stops
// short of both b and the frame does it read on (short only at the end).
func (l *jobLog) frameIn(b []byte, off int64) (e entry, need, n int, err error) {
	return frameAt(b, off, l.preadOnce, l.pread)
}

// preadOnce is one pread at off (again if interrupted).
func (l *jobLog) preadOnce(b []byte, off int64) (int, error) {
	for {
		n, err := unix.Pread(l.fd, b, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, &os.PathError{Op: "read", Path: l.path, Err: err}
		}
		return n, nil
	}
}

// frameAt is frameIn over its two reads: once, one read; full, reads that
// stop short only at the end of the file. The bytes full adds may not
// continue the frame once read (a writer truncated a torn tail and
// appended in between): the frame is then parsed afresh, and its error is
// the answer.
func frameAt(b []byte, off int64, once, full func([]byte, int64) (int, error)) (e entry, need, n int, err error) {
	if n, err = once(b, off); err != nil {
		return entry{}, 0, 0, err
	}
	e, need, err = parseFrame(b[:n], off)
	if err == nil && need > n && n > 0 && n < len(b) {
		var m int
		if m, err = full(b[n:], off+int64(n)); err != nil {
			return entry{}, 0, n, err
		}
		n += m
		e, need, err = parseFrame(b[:n], off)
	}
	return e, need, n, err
}

// readAhead is readAt through the window: a frame the window holds whole
// is read from it, else the window is read afresh from off.
func (l *jobLog) readAhead(off int64) (entry, error) {
	w := l.window()
	if off >= w.off && off < w.off+int64(len(w.b)) {
		e, need, err := parseFrame(w.b[off-w.off:], off)
		if err != nil || need == 0 {
			return e, err
		}
	}
	if cap(w.b) < l.ahead {
		w.b = make([]byte, l.ahead)
	}
	e, need, n, err := l.frameIn(w.b[:cap(w.b)], off)
	w.b, w.off = w.b[:n], off
	if err != nil || need == 0 {
		return e, err
	}
	if n < cap(w.b) {
		return entry{}, errFrame // the file ends before the frame does
	}
	// A frame larger than the window: read it alone.
	defer func(ahead int) { l.ahead = ahead }(l.ahead)
	l.ahead = 0
	return l.readAt(off)
}

// scan calls fn with each frame from off on, in order, up to the end of
// the log as it is now. A frame that is not valid ends the walk there
// (end) when nothing valid follows it (a torn tail, or a frame being
// appended); otherwise the log is damaged (ledger.ErrCorrupt). fn's
// error ends the walk and is returned.
func (l *jobLog) scan(off int64, fn func(e entry) error) (end int64, err error) {
	if walkHook != nil && off <= l.first {
		walkHook(l.path)
	}
	var st unix.Stat_t
	if err := unix.Fstat(l.fd, &st); err != nil {
		return off, &os.PathError{Op: "stat", Path: l.path, Err: err}
	}
	size := st.Size
	// A buffer for the whole log, up to logReadSize: most logs are small.
	want := int(min(max(size-off, 4<<10), logReadSize))
	var buf []byte
	if l.lend != nil {
		if cap(l.lend.scan) < want {
			l.lend.scan = make([]byte, want)
		}
		buf = l.lend.scan[:cap(l.lend.scan)]
	} else {
		buf = make([]byte, want)
	}
	have, at := 0, off // buf[:have] holds the log from at
	for {
		if off >= size {
			return off, nil
		}
		i := int(off - at)
		e, need, perr := parseFrame(buf[i:have], off)
		if perr == nil && need == 0 {
			if err := fn(e); err != nil {
				return off, err
			}
			off = e.end
			continue
		}
		if perr == nil && at+int64(have) < size {
			// More of the file is needed: keep what is left, read on.
			if need > len(buf) {
				nb := make([]byte, need+logReadSize)
				copy(nb, buf[i:have])
				buf = nb
			} else {
				copy(buf, buf[i:have])
			}
			have -= i
			at = off
			n, err := l.pread(buf[have:], at+int64(have))
			if err != nil {
				return off, err
			}
			have += n
			if n == 0 {
				size = at + int64(have)
			}
			continue
		}
		if l.validAfter(off+1, size) {
			return off, l.corrupt(off, errFrame)
		}
		return off, nil
	}
}

// validAfter reports whether a valid frame starts anywhere in [from, size).
func (l *jobLog) validAfter(from, size int64) bool {
	var magic [4]byte
	binary.LittleEndian.PutUint32(magic[:], frameMagic)
	buf := make([]byte, logReadSize)
	for at := from; at < size; {
		n, err := l.pread(buf, at)
		if err != nil || n < 4 {
			return false
		}
		for i := 0; i+4 <= n; i++ {
			if buf[i] == magic[0] && buf[i+1] == magic[1] && buf[i+2] == magic[2] && buf[i+3] == magic[3] {
				if _, err := l.readAt(at + int64(i)); err == nil {
					return true
				}
			}
		}
		at += int64(n - 3)
	}
	return false
}

// lastBefore returns the frame that ends at end, walking back by the
// trailer (errFrame when that frame is not valid).
func (l *jobLog) lastBefore(end int64) (entry, error) {
	if end-frameHead-frameTail < l.first {
		return entry{}, errFrame
	}
	var t [frameTail]byte
	if n, err := l.pread(t[:], end-frameTail); err != nil || n < frameTail {
		return entry{}, errFrame
	}
	off := end - int64(binary.LittleEndian.Uint32(t[:])) - frameHead - frameTail
	if off < l.first {
		return entry{}, errFrame
	}
	e, err := l.readAt(off)
	if err == nil && e.end != end {
		err = errFrame
	}
	return e, err
}

// validEnd returns where the next frame goes: the end of the last valid
// frame. A torn tail (an append cut short by a crash) is truncated away;
// damage before valid frames is refused. Called with the lock held.
func (l *jobLog) validEnd() (int64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(l.fd, &st); err != nil {
		return 0, &os.PathError{Op: "stat", Path: l.path, Err: err}
	}
	if st.Size == l.first {
		return st.Size, nil
	}
	if _, err := l.lastBefore(st.Size); err == nil {
		return st.Size, nil
	}
	end, err := l.scan(l.first, func(entry) error { return nil })
	if err != nil {
		return 0, err
	}
	if err := unix.Ftruncate(l.fd, end); err != nil {
		return 0, &os.PathError{Op: "truncate", Path: l.path, Err: err}
	}
	if err := durable.Fdatasync(l.fd); err != nil {
		return 0, &os.PathError{Op: "fdatasync", Path: l.path, Err: err}
	}
	return end, nil
}

// append writes one frame at the log's end and makes it durable, and
// returns its offset. On failure the log is cut back to where it was.
// Called with the lock held, on a log opened for writing.
func (l *jobLog) append(kind byte, id string, ref int64, payload []byte) (int64, error) {
	off := l.end
	b := frame(kind, id, ref, payload)
	fail := func(op string, err error) (int64, error) {
		unix.Ftruncate(l.fd, off)
		return 0, &os.PathError{Op: op, Path: l.path, Err: err}
	}
	if crashPoint != nil {
		// The crash tests' torn tail: half the frame, then maybe a kill.
		pwriteAll(l.fd, b[:len(b)/2], off)
		reached("log-torn")
	}
	if err := pwriteAll(l.fd, b, off); err != nil {
		return fail("write", err)
	}
	reached("log-written")
	if err := durable.Fdatasync(l.fd); err != nil {
		return fail("fdatasync", err)
	}
	l.end = off + int64(len(b))
	return off, nil
}

// hintOf is the target of an execution's index link: where its newest
// version was (generation, offset) in its job's log.
func hintOf(gen, off int64, job string) string {
	return strconv.FormatInt(gen, 10) + ":" + strconv.FormatInt(off, 10) + ":" + job
}
