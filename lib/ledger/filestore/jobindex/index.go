package jobindex

import (
	"cmp"
	"encoding/binary"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/internal/durable"
)

const (
	// Name is the index's name in its job's directory.
	Name = "_ids"
	// Head is the header's size; EntrySize an entry's.
	Head      = 32
	EntrySize = 16
	// MaxSize bounds an index that a reader takes (16 million executions
	// in one job's log).
	MaxSize = 256 << 20

	magic = "TIDS\x00\x00\x00\x02"
)

// TailMax bounds the entries past an index's sorted ones. (A variable
// only so that the crash tests' writers merge every few finishes.)
var TailMax = 1024

// Hash is FNV-1a (64 bits) of an id, held as a string or as bytes.
func Hash[ID string | []byte](id ID) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= 1099511628211
	}
	return h
}

// Ent is an index entry: the hash of an execution's id, and the offset
// of the frame that made it terminal.
type Ent struct {
	Hash uint64
	Off  int64
}

// EntOf is the entry of execution id's terminal frame at off.
func EntOf[ID string | []byte](id ID, off int64) Ent { return Ent{Hash(id), off} }

// Cmp orders entries by hash, then offset.
func Cmp(a, b Ent) int {
	return cmp.Or(cmp.Compare(a.Hash, b.Hash), cmp.Compare(a.Off, b.Off))
}

// Put appends e's 16 bytes to b.
func Put(b []byte, e Ent) []byte {
	b = binary.LittleEndian.AppendUint64(b, e.Hash)
	return binary.LittleEndian.AppendUint64(b, uint64(e.Off))
}

// Ents returns the entries that b, whole ones of an index, holds.
func Ents(b []byte) []Ent {
	ents := make([]Ent, 0, len(b)/EntrySize)
	for i := 0; i+EntrySize <= len(b); i += EntrySize {
		ents = append(ents, Ent{binary.LittleEndian.Uint64(b[i:]), int64(binary.LittleEndian.Uint64(b[i+8:]))})
	}
	return ents
}

// Encode is an index of generation gen of a log whose inode is ino,
// holding ents, which it sorts.
func Encode(gen int64, ino uint64, ents []Ent) []byte {
	slices.SortFunc(ents, Cmp)
	b := make([]byte, 0, Head+len(ents)*EntrySize)
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint64(b, uint64(gen))
	b = binary.LittleEndian.AppendUint64(b, ino)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(ents)))
	for _, e := range ents {
		b = Put(b, e)
	}
	return b
}

// File is an index as read.
type File struct {
	Gen     int64
	Ino     uint64
	Sorted  int64  // entries sorted, from the first
	Entries []byte // whole ones only
}

// Of reports whether f indexes generation gen of the log whose inode is
// ino.
func (f File) Of(gen int64, ino uint64) bool { return f.Gen == gen && f.Ino == ino }

// Parse reads b, a whole index; ok is false when it is not one.
func Parse(b []byte) (f File, ok bool) {
	if f, ok = ParseHeader(b, int64(len(b))); ok {
		f.Entries = b[Head : Head+(len(b)-Head)/EntrySize*EntrySize]
	}
	return f, ok
}

// ParseHeader reads the header at the start of b, the first bytes of an
// index size bytes long; ok is false when b does not start with one, or
// size cannot hold the entries it says are sorted.
func ParseHeader(b []byte, size int64) (f File, ok bool) {
	if len(b) < Head || size < Head || string(b[:8]) != magic {
		return f, false
	}
	f.Gen = int64(binary.LittleEndian.Uint64(b[8:]))
	f.Ino = binary.LittleEndian.Uint64(b[16:])
	sorted := binary.LittleEndian.Uint64(b[24:])
	if sorted > uint64(size-Head)/EntrySize {
		return f, false
	}
	f.Sorted = int64(sorted)
	return f, true
}

// Holds reports whether f has the sorted entries its header says, and
// holds the entries ents, sorted, hold (in any order past the sorted
// ones: a tail not yet merged is whole too).
func (f File) Holds(ents []Ent) bool {
	if len(f.Entries) != len(ents)*EntrySize {
		return false
	}
	have := Ents(f.Entries)
	if !slices.IsSortedFunc(have[:f.Sorted], Cmp) {
		return false
	}
	slices.SortFunc(have, Cmp)
	return slices.Equal(have, ents)
}

// Offsets returns the offsets that entries give for the id whose hash is
// h.
func Offsets(entries []byte, h uint64) []int64 {
	var offs []int64
	for i := 0; i+EntrySize <= len(entries); i += EntrySize {
		if binary.LittleEndian.Uint64(entries[i:]) == h {
			offs = append(offs, int64(binary.LittleEndian.Uint64(entries[i+8:])))
		}
	}
	return offs
}

// ReadHeader reads the header of the index open as fd, size bytes long
// at the caller's fstat; ok is false when it is not an index of this
// format.
func ReadHeader(fd int, size int64) (f File, ok bool) {
	var head [Head]byte
	if durable.PreadFull(fd, head[:], 0) != nil {
		return f, false
	}
	return ParseHeader(head[:], size)
}

// Search looks in the index open as fd, whose header is f and whose size
// was size at the caller's fstat, for the id whose hash is h: a binary
// search of its sorted entries, then a read of its tail, a window at a
// time, up to its end (a writer may be appending). It returns the
// offsets it gives for the id; ok is false when it could not be read.
func Search(fd int, f File, size int64, h uint64) (offs []int64, ok bool) {
	if size > MaxSize {
		return nil, false
	}
	var e [EntrySize]byte
	hashAt := func(i int64) (uint64, int64, bool) {
		if durable.PreadFull(fd, e[:], Head+i*EntrySize) != nil {
			return 0, 0, false
		}
		return binary.LittleEndian.Uint64(e[:]), int64(binary.LittleEndian.Uint64(e[8:])), true
	}
	lo, hi := int64(0), f.Sorted // the first entry of hash h or more is in [lo, hi]
	for lo < hi {
		mid := lo + (hi-lo)/2
		eh, _, ok := hashAt(mid)
		if !ok {
			return nil, false
		}
		if eh < h {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	for ; lo < f.Sorted; lo++ {
		eh, off, ok := hashAt(lo)
		if !ok {
			return nil, false
		}
		if eh != h {
			break
		}
		offs = append(offs, off)
	}
	at := Head + f.Sorted*EntrySize
	tail, ok := ScanTail(fd, at, size-at, h)
	return append(offs, tail...), ok
}

// ScanTail reads the entries of index fd from offset at to its end, a
// window at a time, and returns the offsets they give for the id whose
// hash is h; ok is false when the index could not be read. expect is how
// many bytes the tail had at the caller's fstat: the window is no larger
// than that needs (a show that searches 200 jobs of a few executions
// each would otherwise clear 200 windows of 16 KiB), and reads on past it
// should a writer have appended since.
func ScanTail(fd int, at, expect int64, h uint64) (offs []int64, ok bool) {
	buf := make([]byte, min(max(expect, 0), int64(TailMax*EntrySize))+2*EntrySize)
	have := 0 // buf[:have] is unread, from offset at
	for {
		n, err := unix.Pread(fd, buf[have:], at+int64(have))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, false
		}
		have += n
		whole := have / EntrySize * EntrySize
		offs = append(offs, Offsets(buf[:whole], h)...)
		if n == 0 {
			return offs, true
		}
		at += int64(whole)
		have = copy(buf, buf[whole:have])
	}
}

// ToAppend reads the header of index fd, open for writing, and reports
// whether a writer of generation gen of the log whose inode is ino may
// add to it: a regular file of one link that indexes that log. size is
// the length of its whole entries.
func ToAppend(fd int, gen int64, ino uint64) (f File, size int64, ok bool) {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 || st.Size < Head {
		return f, 0, false
	}
	f, ok = ReadHeader(fd, st.Size)
	return f, (st.Size - Head) / EntrySize * EntrySize, ok && f.Of(gen, ino)
}

// Merge returns ents, whose first sorted are sorted, with e added, all
// of them sorted: the tail sorted, then merged in one pass.
func Merge(ents []Ent, sorted int64, e Ent) []Ent {
	tail := append(slices.Clone(ents[sorted:]), e)
	slices.SortFunc(tail, Cmp)
	out := make([]Ent, 0, len(ents)+1)
	head := ents[:sorted]
	for len(head) > 0 && len(tail) > 0 {
		if Cmp(head[0], tail[0]) <= 0 {
			out, head = append(out, head[0]), head[1:]
		} else {
			out, tail = append(out, tail[0]), tail[1:]
		}
	}
	out = append(out, head...)
	return append(out, tail...)
}
