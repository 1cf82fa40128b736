package joblog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/internal/durable"
	"github.com/tether-sh/tether/lib/ledger"
)

// The frame format and its constants: see the package doc.
const (
	Name       = "_log"
	frameMagic = 0x32474c54 // "TLG2"
	FrameHead  = 12         // magic, n and crc
	frameTail  = 4
	bodyHead   = 1 + 1 + 8 // and the id
	maxBody    = bodyHead + 255 + 2*ledger.MaxRecordSize
	// MaxFrame is the longest frame: a torn tail (one append cut short)
	// is never longer.
	MaxFrame   = FrameHead + maxBody + frameTail
	idSize     = 8 // the log id, first in the header's payload
	KindHeader = 'H'
	KindClaim  = 'C'
	KindUpdate = 'U'
	ReadSize   = 64 << 10
)

// ErrFrame is a frame that is not valid where one was expected.
var ErrFrame = errors.New("no valid frame")

// CrashPoint, when set (by the store's crash tests only), is called at
// the points of Append that separate two durable steps ("log-torn",
// "log-written"); WalkHook (by its cost tests only) sees every walk of a
// log from its first frame.
var (
	CrashPoint func(name string)
	WalkHook   func(log string)
)

// Entry is one frame of a log.
type Entry struct {
	Off, End int64 // where the frame starts and where the next one does
	Kind     byte
	ID       []byte // valid, as Data, until the next read of the log
	Ref      int64  // 'U': the offset of the claim's frame; 'H': the generation
	Data     []byte // the payload
}

// Frame encodes one frame, to be written at offset off of the log whose
// id is logID (0 for the header, whose payload holds the id).
func Frame(logID uint64, off int64, kind byte, id string, ref int64, payload []byte) []byte {
	n := bodyHead + len(id) + len(payload)
	b := make([]byte, FrameHead+n+frameTail)
	binary.LittleEndian.PutUint32(b, frameMagic)
	binary.LittleEndian.PutUint32(b[4:], uint32(n))
	body := b[FrameHead : FrameHead+n]
	body[0] = kind
	body[1] = byte(len(id))
	copy(body[2:], id)
	binary.LittleEndian.PutUint64(body[2+len(id):], uint64(ref))
	copy(body[bodyHead+len(id):], payload)
	binary.LittleEndian.PutUint32(b[8:], frameSum(logID, off, body))
	binary.LittleEndian.PutUint32(b[FrameHead+n:], uint32(n))
	return b
}

// frameSum is a frame's CRC: of the place it was written for (its log's
// id and its offset) and then its body, so that a frame read anywhere else
// (a log doubled, spliced or copied from another) is not valid, at no
// byte of its own.
func frameSum(logID uint64, off int64, body []byte) uint32 {
	var place [16]byte
	binary.LittleEndian.PutUint64(place[:], logID)
	binary.LittleEndian.PutUint64(place[8:], uint64(off))
	return ChecksumOf(place[:], body)
}

// ParseFrame reads the frame at the start of b, found at offset off of
// the log whose id is logID (0 for the header). need > 0 says b is too
// short: the frame needs that many bytes.
func ParseFrame(b []byte, logID uint64, off int64) (e Entry, need int, err error) {
	if len(b) < FrameHead {
		return e, FrameHead, nil
	}
	if binary.LittleEndian.Uint32(b) != frameMagic {
		return e, 0, ErrFrame
	}
	n := int(binary.LittleEndian.Uint32(b[4:]))
	if n < bodyHead || n > maxBody {
		return e, 0, ErrFrame
	}
	size := FrameHead + n + frameTail
	if len(b) < size {
		return e, size, nil
	}
	body := b[FrameHead : FrameHead+n]
	if binary.LittleEndian.Uint32(b[FrameHead+n:]) != uint32(n) || frameSum(logID, off, body) != binary.LittleEndian.Uint32(b[8:]) {
		return e, 0, ErrFrame
	}
	k := int(body[1])
	if bodyHead+k > n {
		return e, 0, ErrFrame
	}
	e = Entry{Off: off, End: off + int64(size), Kind: body[0], ID: body[2 : 2+k],
		Ref: int64(binary.LittleEndian.Uint64(body[2+k:])), Data: body[bodyHead+k:]}
	switch e.Kind {
	case KindHeader, KindClaim, KindUpdate:
		return e, 0, nil
	}
	return Entry{}, 0, ErrFrame
}

// Log is one job's log, open.
type Log struct {
	fd   int
	Path string
	Gen  int64
	// ID is the log's id, random, made with the log (a copy of it keeps
	// it); Job is the job its header names.
	ID  uint64
	Job string
	Ino uint64 // its inode: a new one for each generation (and copy)
	// First is where the first frame after the header starts; End is
	// where the next frame is appended (a writer's, found by validEnd) or
	// the size when opened (a reader's).
	First, End int64
	// Header is the header's payload (the store's: what prune removed
	// from the log), valid while the log is open.
	Header []byte
	buf    []byte
	// Ahead, set by walks that only read (a list, prune's old log), keeps
	// what ReadAt read in a window, up to Ahead bytes: the next frames
	// they ask for are mostly just after the last.
	Ahead int
	win   *window
	claim []byte // ClaimBuffer's
	// lend, when set, lends the log its buffers (buf, the window, claim)
	// while it reads: a read of many logs at once holds one set.
	lend *Lender
}

// Open opens the log in the job directory jd: for appending (write,
// under the store's lock: its valid end found, a torn tail truncated, a
// copy made first if it has another link) or for reading, through lend's
// buffers (nil: its own). check is the store's say on the file it opened
// (its owner). A missing log is os.ErrNotExist.
func Open(jd durable.Dir, write bool, lend *Lender, check func(path string, st *unix.Stat_t) error) (*Log, error) {
	flags := unix.O_RDONLY
	if write {
		flags = unix.O_RDWR
	}
	path := jd.Show(Name)
	fd, err := unix.Openat(jd.FD, Name, flags|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ELOOP {
			return nil, fmt.Errorf("%w: %s is a symbolic link", ledger.ErrCorrupt, path)
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	l := &Log{fd: fd, Path: path, lend: lend}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		l.Close()
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		l.Close()
		return nil, fmt.Errorf("%w: %s is not a regular file", ledger.ErrCorrupt, path)
	}
	if err := check(path, &st); err != nil {
		l.Close()
		return nil, err
	}
	l.End, l.Ino = st.Size, st.Ino
	h, err := l.ReadAt(0)
	if err == nil && h.Kind != KindHeader {
		err = ErrFrame
	}
	if err != nil {
		l.Close()
		return nil, l.Corrupt(0, err)
	}
	if len(h.Data) < idSize || binary.LittleEndian.Uint64(h.Data) == 0 {
		l.Close()
		return nil, l.Corrupt(0, ErrFrame)
	}
	l.Gen, l.First, l.Job = h.Ref, h.End, string(h.ID)
	l.ID, l.Header = binary.LittleEndian.Uint64(h.Data), bytes.Clone(h.Data[idSize:])
	if !write {
		return l, nil
	}
	if st.Nlink > 1 {
		// A hard link made by someone else (a snapshot) is never written
		// through: the log is copied and the copy takes its name.
		if err := l.detach(jd, check); err != nil {
			l.Close()
			return nil, err
		}
	}
	if l.End, err = l.validEnd(); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// FD is the log's descriptor, for a caller's fstat.
func (l *Log) FD() int { return l.fd }

// ClaimBuffer is a buffer a reader of the log may copy a claim into, kept
// across reads: the lender's when the log is lent buffers.
func (l *Log) ClaimBuffer() *[]byte {
	if l.lend != nil {
		return &l.lend.claim
	}
	return &l.claim
}

// Close closes the log.
func (l *Log) Close() {
	if l.fd >= 0 {
		unix.Close(l.fd)
		l.fd = -1
	}
}

// corrupt is err, a frame of l at off that could not be read, as the
// error a caller reports.
func (l *Log) Corrupt(off int64, err error) error {
	if errors.Is(err, ErrFrame) {
		return fmt.Errorf("%w: %s: no valid frame at offset %d", ledger.ErrCorrupt, l.Path, off)
	}
	var pe *os.PathError
	if errors.As(err, &pe) || errors.Is(err, ledger.ErrCorrupt) {
		return fmt.Errorf("%s: %w", l.Path, err)
	}
	return fmt.Errorf("reading %s: %w", l.Path, err)
}

// pread fills b from offset off; short only at the end of the file.
func (l *Log) pread(b []byte, off int64) (int, error) {
	n, err := durable.PreadAt(l.fd, b, off)
	if err != nil {
		return n, &os.PathError{Op: "read", Path: l.Path, Err: err}
	}
	return n, nil
}

// readAt reads the frame at off (ErrFrame when there is none).
func (l *Log) ReadAt(off int64) (Entry, error) {
	if l.Ahead > 0 {
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
			return Entry{}, ErrFrame // the file ends before the frame does
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
func (l *Log) frameIn(b []byte, off int64) (e Entry, need, n int, err error) {
	return frameAt(b, l.ID, off, l.preadOnce, l.pread)
}

// preadOnce is one pread at off (again if interrupted).
func (l *Log) preadOnce(b []byte, off int64) (int, error) {
	for {
		n, err := unix.Pread(l.fd, b, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, &os.PathError{Op: "read", Path: l.Path, Err: err}
		}
		return n, nil
	}
}

// frameAt is frameIn over its two reads: once, one read; full, reads that
// stop short only at the end of the file. The bytes full adds may not
// continue the frame once read (a writer truncated a torn tail and
// appended in between): the frame is then parsed afresh, and its error is
// the answer.
func frameAt(b []byte, logID uint64, off int64, once, full func([]byte, int64) (int, error)) (e Entry, need, n int, err error) {
	if n, err = once(b, off); err != nil {
		return Entry{}, 0, 0, err
	}
	e, need, err = ParseFrame(b[:n], logID, off)
	if err == nil && need > n && n > 0 && n < len(b) {
		var m int
		if m, err = full(b[n:], off+int64(n)); err != nil {
			return Entry{}, 0, n, err
		}
		n += m
		e, need, err = ParseFrame(b[:n], logID, off)
	}
	return e, need, n, err
}

// readAhead is readAt through the window: a frame the window holds whole
// is read from it, else the window is read afresh from off.
func (l *Log) readAhead(off int64) (Entry, error) {
	w := l.window()
	if off >= w.off && off < w.off+int64(len(w.b)) {
		e, need, err := ParseFrame(w.b[off-w.off:], l.ID, off)
		if err != nil || need == 0 {
			return e, err
		}
	}
	if cap(w.b) < l.Ahead {
		w.b = make([]byte, l.Ahead)
	}
	e, need, n, err := l.frameIn(w.b[:cap(w.b)], off)
	w.b, w.off = w.b[:n], off
	if err != nil || need == 0 {
		return e, err
	}
	if n < cap(w.b) {
		return Entry{}, ErrFrame // the file ends before the frame does
	}
	// A frame larger than the window: read it alone.
	defer func(ahead int) { l.Ahead = ahead }(l.Ahead)
	l.Ahead = 0
	return l.ReadAt(off)
}

// scan calls fn with each frame from off on, in order, up to the end of
// the log as it is now. A frame that is not valid ends the walk there
// (end) when nothing valid follows it (a torn tail, or a frame being
// appended); otherwise the log is damaged (ledger.ErrCorrupt). fn's
// error ends the walk and is returned.
func (l *Log) Scan(off int64, fn func(e Entry) error) (end int64, err error) {
	if WalkHook != nil && off <= l.First {
		WalkHook(l.Path)
	}
	var st unix.Stat_t
	if err := unix.Fstat(l.fd, &st); err != nil {
		return off, &os.PathError{Op: "stat", Path: l.Path, Err: err}
	}
	size := st.Size
	// A buffer for the whole log, up to ReadSize: most logs are small.
	want := int(min(max(size-off, 4<<10), ReadSize))
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
		e, need, perr := ParseFrame(buf[i:have], l.ID, off)
		if perr == nil && need == 0 {
			if err := fn(e); err != nil {
				return off, err
			}
			off = e.End
			continue
		}
		if perr == nil && at+int64(have) < size {
			// More of the file is needed: keep what is left, read on.
			if need > len(buf) {
				nb := make([]byte, need+ReadSize)
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
		if err := l.tornTail(off, size); err != nil {
			return off, err
		}
		return off, nil
	}
}

// lastBefore returns the frame that ends at end, walking back by the
// trailer (ErrFrame when that frame is not valid).
func (l *Log) LastBefore(end int64) (Entry, error) {
	if end-FrameHead-frameTail < l.First {
		return Entry{}, ErrFrame
	}
	var t [frameTail]byte
	if n, err := l.pread(t[:], end-frameTail); err != nil || n < frameTail {
		return Entry{}, ErrFrame
	}
	off := end - int64(binary.LittleEndian.Uint32(t[:])) - FrameHead - frameTail
	if off < l.First {
		return Entry{}, ErrFrame
	}
	e, err := l.ReadAt(off)
	if err == nil && e.End != end {
		err = ErrFrame
	}
	return e, err
}

// Backward calls fn with each frame that ends at or before end, the
// newest first, until fn returns false or the first frame was passed. It
// reads the log backwards in windows of ReadSize (a frame's length is
// also at its end), so that the newest few frames of a long log cost a
// read or two, not a read each. A frame that does not parse where one
// should end returns ErrFrame: a torn tail or an append under way, or
// damage, which a forward Scan tells apart. fn's Entry is valid only
// during the call.
func (l *Log) Backward(end int64, fn func(Entry) bool) error {
	var win []byte // the log's bytes from winOff to the end of the window
	winOff := end
	load := func(from, to int64) error {
		from = max(l.First, min(from, to-ReadSize))
		if cap(win) < int(to-from) {
			win = make([]byte, to-from)
		}
		win = win[:to-from]
		if n, err := l.pread(win, from); err != nil || n < len(win) {
			return ErrFrame
		}
		winOff = from
		return nil
	}
	for end > l.First {
		if end-frameTail < l.First {
			return ErrFrame
		}
		if end-frameTail < winOff || end > winOff+int64(len(win)) {
			if err := load(end-frameTail, end); err != nil {
				return err
			}
		}
		n := int64(binary.LittleEndian.Uint32(win[end-frameTail-winOff:]))
		off := end - n - FrameHead - frameTail
		if n < bodyHead || n > maxBody || off < l.First {
			return ErrFrame
		}
		if off < winOff {
			if err := load(off, end); err != nil {
				return err
			}
		}
		e, need, err := ParseFrame(win[off-winOff:end-winOff], l.ID, off)
		if err != nil || need != 0 || e.End != end {
			return ErrFrame
		}
		if !fn(e) {
			return nil
		}
		end = off
	}
	return nil
}

// validEnd returns where the next frame goes: the end of the last valid
// frame. A torn tail (an append cut short by a crash) is truncated away;
// damage before valid frames is refused. Called with the lock held.
func (l *Log) validEnd() (int64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(l.fd, &st); err != nil {
		return 0, &os.PathError{Op: "stat", Path: l.Path, Err: err}
	}
	if st.Size == l.First {
		return st.Size, nil
	}
	if _, err := l.LastBefore(st.Size); err == nil {
		return st.Size, nil
	}
	end, err := l.Scan(l.First, func(Entry) error { return nil })
	if err != nil {
		return 0, err
	}
	if err := unix.Ftruncate(l.fd, end); err != nil {
		return 0, &os.PathError{Op: "truncate", Path: l.Path, Err: err}
	}
	if err := durable.Fdatasync(l.fd); err != nil {
		return 0, &os.PathError{Op: "fdatasync", Path: l.Path, Err: err}
	}
	return end, nil
}

// append writes one frame at the log's end and makes it durable, and
// returns its offset. On failure the log is cut back to where it was.
// Called with the lock held, on a log opened for writing.
func (l *Log) Append(kind byte, id string, ref int64, payload []byte) (int64, error) {
	off := l.End
	b := Frame(l.ID, off, kind, id, ref, payload)
	fail := func(op string, err error) (int64, error) {
		unix.Ftruncate(l.fd, off)
		return 0, &os.PathError{Op: op, Path: l.Path, Err: err}
	}
	if CrashPoint != nil {
		// The crash tests' torn tail: half the frame, then maybe a kill.
		durable.PwriteAll(l.fd, b[:len(b)/2], off)
		CrashPoint("log-torn")
	}
	if err := durable.PwriteAll(l.fd, b, off); err != nil {
		return fail("write", err)
	}
	if CrashPoint != nil {
		CrashPoint("log-written")
	}
	if err := durable.Fdatasync(l.fd); err != nil {
		return fail("fdatasync", err)
	}
	l.End = off + int64(len(b))
	return off, nil
}
