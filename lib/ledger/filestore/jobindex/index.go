package filestore

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/internal/durable"
	"github.com/tether-sh/tether/lib/ledger"
)

// A job's index of finished executions, jobs/JOB/_ids: where each
// execution of the job's log became terminal, so that a finished one is
// found with no link of its own. (A symbolic link per finished execution,
// exec/ID, cost prune an unlink each: 0.73 s of its 1 s at 100,000.)
//
//	magic   8 bytes "TIDS\0\0\0\2"
//	gen     u64                 the generation of the log it indexes
//	ino     u64                 and its inode (each generation, or copy
//	                            of a log, is a new file)
//	sorted  u64                 how many entries, from the first, are
//	                            sorted by hash (then offset)
//	then 16 bytes per frame that made an execution terminal:
//	hash    u64                 idHash of the execution's id
//	off     u64                 the frame's offset
//
// The entries past the sorted ones (the tail) are in log order: a finish
// appends one. The finish that would make the tail longer than
// idsTailMax writes the index anew, all of it sorted (a temporary file
// renamed into place). So a lookup costs a binary search of the sorted
// entries (17 reads of 16 bytes at 100,000) and a read of at most 16 KiB
// of tail, however many executions the job holds; a finish costs a
// 16-byte write, and a rewrite of the index every 1,024 finishes.
//
// It is kept as the links are (see "Crash safety" in doc.go): not
// flushed (unless the boot id is unknown: appendIds), and only the end of
// a boot can lose what it holds.
//   - A transition that makes an execution terminal appends its entry
//     (or writes the index anew) after its frame (the commit), and only
//     then removes the execution's link from active/. So, during a boot,
//     every finished execution is in its job's index or still has its
//     link in active/ (a hint that leads to its newest version): a reader
//     that finds neither has no such execution in the job. A writer that
//     cannot append (the index is missing, damaged, of another
//     generation, has another link) writes it anew from the log; one that
//     cannot write it leaves the link.
//   - Prune removes the index before it renames the log's next
//     generation into place (or stops), and writes the next one's after;
//     the first writer of a boot writes every job's from its log
//     (relinkAll). An index that is missing, damaged or names another log
//     than the one in place (by its inode, and by its generation where a
//     frame is read) is not trusted: its job's log is read instead.
//   - A reader takes an entry as a hint: the frame at its offset must be
//     of the id.
const (
	idsName  = "_ids"
	idsMagic = "TIDS\x00\x00\x00\x02"
	idsHead  = 32
	idsEntry = 16
	// maxIdsSize bounds an index that a reader takes (16 million
	// executions in one job's log).
	maxIdsSize = 256 << 20
)

// idsTailMax bounds the entries past an index's sorted ones. (A
// variable only so that the crash tests' writers merge every few
// finishes.)
var idsTailMax = 1024

// idHash is FNV-1a (64 bits) of an id, held as a string or as bytes.
func idHash[ID string | []byte](id ID) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= 1099511628211
	}
	return h
}

// idsEnt is an index entry: the hash of an execution's id, and the
// offset of the frame that made it terminal.
type idsEnt struct {
	hash uint64
	off  int64
}

// entOf is the entry of execution id's terminal frame at off.
func entOf[ID string | []byte](id ID, off int64) idsEnt { return idsEnt{idHash(id), off} }

// cmpEnts orders entries by hash, then offset.
func cmpEnts(a, b idsEnt) int {
	return cmp.Or(cmp.Compare(a.hash, b.hash), cmp.Compare(a.off, b.off))
}

// putEnt appends e's 16 bytes to b.
func putEnt(b []byte, e idsEnt) []byte {
	b = binary.LittleEndian.AppendUint64(b, e.hash)
	return binary.LittleEndian.AppendUint64(b, uint64(e.off))
}

// getEnts returns the entries that b, whole ones of an index, holds.
func getEnts(b []byte) []idsEnt {
	ents := make([]idsEnt, 0, len(b)/idsEntry)
	for i := 0; i+idsEntry <= len(b); i += idsEntry {
		ents = append(ents, idsEnt{binary.LittleEndian.Uint64(b[i:]), int64(binary.LittleEndian.Uint64(b[i+8:]))})
	}
	return ents
}

// encodeIds is an index of generation gen of a log whose inode is ino,
// holding ents, which it sorts.
func encodeIds(gen int64, ino uint64, ents []idsEnt) []byte {
	slices.SortFunc(ents, cmpEnts)
	b := make([]byte, 0, idsHead+len(ents)*idsEntry)
	b = append(b, idsMagic...)
	b = binary.LittleEndian.AppendUint64(b, uint64(gen))
	b = binary.LittleEndian.AppendUint64(b, ino)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(ents)))
	for _, e := range ents {
		b = putEnt(b, e)
	}
	return b
}

// idsOf is an index of l holding ents, which it sorts.
func idsOf(l *jobLog, ents []idsEnt) []byte { return encodeIds(l.gen, l.ino, ents) }

// idsFile is an index as read.
type idsFile struct {
	gen     int64
	ino     uint64
	sorted  int64  // entries sorted, from the first
	entries []byte // whole ones only
}

// of reports whether f indexes l.
func (f idsFile) of(l *jobLog) bool { return f.gen == l.gen && f.ino == l.ino }

// readIds reads the index in job directory jd; ok is false when there is
// none or it is not one.
func readIds(jd dirh) (f idsFile, ok bool) {
	b, err := readSmall(jd, idsName, maxIdsSize)
	if err != nil {
		return f, false
	}
	if f, ok = parseIdsHeader(b, int64(len(b))); ok {
		f.entries = b[idsHead : idsHead+(len(b)-idsHead)/idsEntry*idsEntry]
	}
	return f, ok
}

// readIdsAny is readIds that also reads an index of the version before
// this format ("TIDS\0\0\0\1", a header of 24 bytes: no sorted count,
// entries in log order), as unsorted entries.
func readIdsAny(jd dirh) (f idsFile, ok bool) {
	if f, ok = readIds(jd); ok {
		return f, true
	}
	const v1Magic, v1Head = "TIDS\x00\x00\x00\x01", 24
	b, err := readSmall(jd, idsName, maxIdsSize)
	if err != nil || len(b) < v1Head || string(b[:8]) != v1Magic {
		return f, false
	}
	f.gen = int64(binary.LittleEndian.Uint64(b[8:]))
	f.ino = binary.LittleEndian.Uint64(b[16:])
	f.entries = b[v1Head : v1Head+(len(b)-v1Head)/idsEntry*idsEntry]
	return f, true
}

// parseIdsHeader reads the header at the start of b, the first bytes of
// an index size bytes long; ok is false when b does not start with one,
// or size cannot hold the entries it says are sorted.
func parseIdsHeader(b []byte, size int64) (f idsFile, ok bool) {
	if len(b) < idsHead || size < idsHead || string(b[:8]) != idsMagic {
		return f, false
	}
	f.gen = int64(binary.LittleEndian.Uint64(b[8:]))
	f.ino = binary.LittleEndian.Uint64(b[16:])
	sorted := binary.LittleEndian.Uint64(b[24:])
	if sorted > uint64(size-idsHead)/idsEntry {
		return f, false
	}
	f.sorted = int64(sorted)
	return f, true
}

// sameIds reports whether the index in job directory jd indexes l, has
// the sorted entries its header says, and holds the entries ents, sorted,
// hold (in any order past the sorted ones: a tail not yet merged is whole
// too).
func sameIds(jd dirh, l *jobLog, ents []idsEnt) bool {
	f, ok := readIds(jd)
	if !ok || !f.of(l) || len(f.entries) != len(ents)*idsEntry {
		return false
	}
	have := getEnts(f.entries)
	if !slices.IsSortedFunc(have[:f.sorted], cmpEnts) {
		return false
	}
	slices.SortFunc(have, cmpEnts)
	return slices.Equal(have, ents)
}

// logIno returns the inode of the log in job directory jd (0: none).
func logIno(jd dirh) uint64 {
	var st unix.Stat_t
	if unix.Fstatat(jd.FD, logName, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return 0
	}
	return st.Ino
}

// idsFor returns the offsets that entries give for the id whose hash is h.
func idsFor(entries []byte, h uint64) []int64 {
	var offs []int64
	for i := 0; i+idsEntry <= len(entries); i += idsEntry {
		if binary.LittleEndian.Uint64(entries[i:]) == h {
			offs = append(offs, int64(binary.LittleEndian.Uint64(entries[i+8:])))
		}
	}
	return offs
}

// openIds opens the index in job directory jd and reads its header: its
// descriptor (the caller closes it), the header, and the file's size at
// its fstat. ok is false, and nothing left open, when jd has no index of
// this format.
func openIds(jd dirh) (fd int, f idsFile, size int64, ok bool) {
	fd, st, err := openRegular(jd, idsName)
	if err != nil {
		return -1, f, 0, false
	}
	var head [idsHead]byte
	if preadFull(fd, head[:], 0) == nil {
		if f, ok = parseIdsHeader(head[:], st.Size); ok {
			return fd, f, st.Size, true
		}
	}
	unix.Close(fd)
	return -1, f, 0, false
}

// searchIds looks in the index in job directory jd for the id whose hash
// is h: a binary search of its sorted entries, then a read of its tail,
// a window at a time, up to its end (a writer may be appending). It
// returns the index's header (f, entries left out), the offsets it gives
// for the id, and whether it is an index.
func searchIds(jd dirh, h uint64) (f idsFile, offs []int64, ok bool) {
	fd, f, size, ok := openIds(jd)
	if !ok {
		return f, nil, false
	}
	defer unix.Close(fd)
	if size > maxIdsSize {
		return f, nil, false
	}
	var e [idsEntry]byte
	hashAt := func(i int64) (uint64, int64, bool) {
		if preadFull(fd, e[:], idsHead+i*idsEntry) != nil {
			return 0, 0, false
		}
		return binary.LittleEndian.Uint64(e[:]), int64(binary.LittleEndian.Uint64(e[8:])), true
	}
	lo, hi := int64(0), f.sorted // the first entry of hash h or more is in [lo, hi]
	for lo < hi {
		mid := lo + (hi-lo)/2
		eh, _, ok := hashAt(mid)
		if !ok {
			return f, nil, false
		}
		if eh < h {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	for ; lo < f.sorted; lo++ {
		eh, off, ok := hashAt(lo)
		if !ok {
			return f, nil, false
		}
		if eh != h {
			break
		}
		offs = append(offs, off)
	}
	at := idsHead + f.sorted*idsEntry
	tail, ok := scanIds(fd, at, size-at, h)
	return f, append(offs, tail...), ok
}

// scanIds reads the entries of index fd from offset at to its end, a
// window at a time, and returns the offsets they give for the id whose
// hash is h; ok is false when the index could not be read. expect is how
// many bytes the tail had at the caller's fstat: the window is no larger
// than that needs (a show that searches 200 jobs of a few executions
// each would otherwise clear 200 windows of 16 KiB), and reads on past it
// should a writer have appended since.
func scanIds(fd int, at, expect int64, h uint64) (offs []int64, ok bool) {
	buf := make([]byte, min(max(expect, 0), int64(idsTailMax*idsEntry))+2*idsEntry)
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
		whole := have / idsEntry * idsEntry
		offs = append(offs, idsFor(buf[:whole], h)...)
		if n == 0 {
			return offs, true
		}
		at += int64(whole)
		have = copy(buf, buf[whole:have])
	}
}

// terminalFrame reports whether e makes its execution terminal: a claim
// of a terminal record (prune's next generation holds those) or an
// update to a terminal status. A terminal version is never followed by
// another, so each finished execution has exactly one.
func terminalFrame(e entry) bool {
	return (e.kind == kindClaim || e.kind == kindUpdate) && terminalDelta(e.data)
}

// idsOfLog returns the index of l built from its frames (from its
// header up to end, where the walk stopped) and the walk's error.
func idsOfLog(l *jobLog) (ids []byte, end int64, err error) {
	var ents []idsEnt
	end, err = l.scan(l.first, func(e entry) error {
		if terminalFrame(e) {
			ents = append(ents, entOf(e.id, e.off))
		}
		return nil
	})
	return idsOf(l, ents), end, err
}

// writeIds writes job's index (jd its directory), a temporary file
// renamed into place: with sync, fdatasync'ed before and jd fsync'ed
// after.
func writeIds(jd dirh, ids []byte, sync bool) error {
	if err := durable.Write(jd, idsName, ids, sync); err != nil {
		return err
	}
	if sync {
		return jd.Sync()
	}
	return nil
}

// appendIds adds to the index of loc's job the entry of its execution's
// terminal frame, at loc.off: appended to its tail, or, where the tail is
// full, merged with every entry into an index written anew. Where the
// index cannot take it (missing, damaged, of another generation, with
// another link), it is written anew from the log. Called with the lock
// held, the frame written. Not flushed (see the index's doc), unless the
// boot is unknown: then no new boot can be told from this one, and the
// entry is flushed before the link goes.
func (s *Store) appendIds(loc *located) error {
	sync := !s.linksKept()
	ent := entOf(loc.rec.ID, loc.off)
	fd, err := unix.Openat(loc.jd.FD, idsName, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err == nil {
		f, size, ok := idsToAppend(fd, loc.log)
		switch {
		case ok && size/idsEntry-f.sorted < int64(idsTailMax):
			err = pwriteAll(fd, putEnt(nil, ent), idsHead+size)
			if err == nil && sync {
				err = durable.Fdatasync(fd)
			}
			unix.Close(fd)
			if err != nil {
				return &os.PathError{Op: "write", Path: loc.jd.Show(idsName), Err: err}
			}
			return nil
		case ok:
			b := make([]byte, size)
			err = preadFull(fd, b, idsHead)
			unix.Close(fd)
			if err == nil {
				return writeIds(loc.jd, idsOf(loc.log, mergeEnts(getEnts(b), f.sorted, ent)), sync)
			}
		default:
			unix.Close(fd)
		}
	}
	ids, _, err := idsOfLog(loc.log)
	if err != nil {
		return err
	}
	return writeIds(loc.jd, ids, sync)
}

// idsToAppend reads the header of index fd, open for writing, and reports
// whether a writer of l may add to it: a regular file of one link that
// indexes l. size is the length of its whole entries.
func idsToAppend(fd int, l *jobLog) (f idsFile, size int64, ok bool) {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 || st.Size < idsHead {
		return f, 0, false
	}
	var head [idsHead]byte
	if preadFull(fd, head[:], 0) != nil {
		return f, 0, false
	}
	f, ok = parseIdsHeader(head[:], st.Size)
	return f, (st.Size - idsHead) / idsEntry * idsEntry, ok && f.of(l)
}

// mergeEnts returns ents, whose first sorted are sorted, with e added,
// all of them sorted: the tail sorted, then merged in one pass.
func mergeEnts(ents []idsEnt, sorted int64, e idsEnt) []idsEnt {
	tail := append(slices.Clone(ents[sorted:]), e)
	slices.SortFunc(tail, cmpEnts)
	out := make([]idsEnt, 0, len(ents)+1)
	head := ents[:sorted]
	for len(head) > 0 && len(tail) > 0 {
		if cmpEnts(head[0], tail[0]) <= 0 {
			out, head = append(out, head[0]), head[1:]
		} else {
			out, tail = append(out, tail[0]), tail[1:]
		}
	}
	out = append(out, head...)
	return append(out, tail...)
}

// retire takes the link of loc's execution, now terminal, out of active/
// once its job's index holds it. Best effort: a link left in active/
// costs a longer read, never a wrong one.
func (s *Store) retire(loc *located) {
	if s.appendIds(loc) != nil {
		return
	}
	reached("indexed")
	unix.Unlinkat(s.active.FD, loc.rec.ID, 0)
}

// locateFinished finds execution id, which has no link, through the
// indexes of the jobs, those its hint names first (jobsFor; write: its log open for appending, under the
// lock); a job whose index cannot be trusted has its log read.
func (s *Store) locateFinished(id string, write bool) (*located, error) {
	jobs, err := s.jobsFor(id)
	if err != nil {
		return nil, err
	}
	h := idHash(id)
	var errs []error
	for _, job := range jobs {
		loc, err := s.findFinished(job, id, h, write)
		if err == nil {
			return loc, nil
		}
		if !errors.Is(err, ledger.ErrNotFound) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		// The id may be in what could not be read.
		return nil, errors.Join(errs...)
	}
	return nil, fmt.Errorf("%w %s", ledger.ErrNotFound, id)
}

// findFinished looks for execution id (its hash h) in job.
func (s *Store) findFinished(job, id string, h uint64, write bool) (*located, error) {
	notFound := fmt.Errorf("%w %s", ledger.ErrNotFound, id)
	jd, err := openSubdir(s.jobs, job)
	if errors.Is(err, os.ErrNotExist) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	f, offs, trusted := searchIds(jd, h)
	if trusted && f.ino == logIno(jd) {
		if len(offs) == 0 {
			closeDir(jd)
			return nil, notFound
		}
	}
	loc := &located{job: job, jd: jd}
	if loc.log, err = openLog(jd, job, write); err != nil {
		loc.close()
		if errors.Is(err, os.ErrNotExist) {
			return nil, notFound
		}
		return nil, err
	}
	l := loc.log
	if trusted && f.of(l) {
		damaged := false
		for _, off := range offs {
			e, err := l.readAt(off)
			if err != nil {
				// No frame where the index says: the log or the index is
				// damaged, and the walk below tells which.
				damaged = true
				continue
			}
			if string(e.id) != id || e.kind == kindHeader {
				continue // another id of the same hash
			}
			if err := loc.find(id, l.gen, off); err == nil {
				return loc, nil
			}
			damaged = true // its claim, but not its versions
		}
		if !damaged {
			loc.close()
			return nil, notFound
		}
	}
	// An index not to be trusted (a prune or a write of it cut short), or
	// one that led to damage: the log, then. A damaged record is
	// ErrCorrupt, never "not found": that would free an --instant slot it
	// holds for a second run.
	if err := loc.walkFor(id); err != nil {
		loc.close()
		return nil, err
	}
	return loc, nil
}

// walkFor finds execution id in loc's log by reading it from its start:
// its claim, then its versions up to the terminal one, where the walk
// stops (so a damage past it does not hide a finished record). None is
// ErrNotFound.
func (loc *located) walkFor(id string) error {
	l := loc.log
	loc.claimOff = -1
	_, err := l.scan(l.first, func(e entry) error {
		if string(e.id) != id || (e.kind != kindClaim && e.ref != loc.claimOff) || e.kind == kindHeader {
			return nil
		}
		if err := loc.take(e); err != nil {
			return err
		}
		if loc.rec.Status.Terminal() {
			return errFound
		}
		return nil
	})
	switch {
	case errors.Is(err, errFound):
		return nil
	case err != nil:
		return err
	case loc.claimOff < 0:
		return fmt.Errorf("%w %s", ledger.ErrNotFound, id)
	}
	return nil
}
