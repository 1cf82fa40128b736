package filestore

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

// A job's index of finished executions, jobs/JOB/_ids: where each
// execution of the job's log became terminal, so that a finished one is
// found with no link of its own. (A symbolic link per finished execution,
// exec/ID, cost prune an unlink each: 0.73 s of its 1 s at 100,000.)
//
//	magic   8 bytes "TIDS\0\0\0\1"
//	gen     u64                 the generation of the log it indexes
//	ino     u64                 and its inode (each generation, or copy
//	                            of a log, is a new file)
//	then, in log order, 16 bytes per frame that made an execution terminal:
//	hash    u64                 idHash of the execution's id
//	off     u64                 the frame's offset
//
// It is kept as the links are (see "Crash safety" in doc.go): not
// flushed (unless the boot id is unknown: appendIds), and only the end of
// a boot can lose what it holds.
//   - A transition that makes an execution terminal appends its entry
//     after its frame (the commit) and only then removes the execution's
//     link from active/. So, during a boot, every finished execution is in
//     its job's index or still has its link in active/ (a hint that leads
//     to its newest version): a reader that finds neither has no such
//     execution in the job. A writer that cannot append (the index is
//     missing, damaged, of another generation, has another link) writes
//     it anew from the log; one that cannot write it leaves the link.
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
	idsMagic = "TIDS\x00\x00\x00\x01"
	idsHead  = 24
	idsEntry = 16
	// maxIdsSize bounds an index that a reader takes (16 million
	// executions in one job's log).
	maxIdsSize = 256 << 20
)

// idHash is FNV-1a (64 bits) of an id, held as a string or as bytes.
func idHash[ID string | []byte](id ID) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= 1099511628211
	}
	return h
}

// idsHeader is the header of an index of l.
func idsHeader(l *jobLog) []byte { return idsHeaderOf(l.gen, l.ino) }

// idsHeaderOf is the header of an index of generation gen of a log whose
// inode is ino.
func idsHeaderOf(gen int64, ino uint64) []byte {
	b := make([]byte, idsHead, idsHead+64*idsEntry)
	copy(b, idsMagic)
	binary.LittleEndian.PutUint64(b[8:], uint64(gen))
	binary.LittleEndian.PutUint64(b[16:], ino)
	return b
}

// appendIdsEntry appends the entry of execution id's terminal frame at off.
func appendIdsEntry(b []byte, id []byte, off int64) []byte {
	b = binary.LittleEndian.AppendUint64(b, idHash(id))
	return binary.LittleEndian.AppendUint64(b, uint64(off))
}

// idsFile is an index as read.
type idsFile struct {
	gen     int64
	ino     uint64
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
	if f, ok = parseIdsHeader(b); ok {
		f.entries = b[idsHead : idsHead+(len(b)-idsHead)/idsEntry*idsEntry]
	}
	return f, ok
}

// parseIdsHeader reads the header at the start of b, an index's first
// bytes; ok is false when b does not start with one.
func parseIdsHeader(b []byte) (f idsFile, ok bool) {
	if len(b) < idsHead || string(b[:8]) != idsMagic {
		return f, false
	}
	f.gen = int64(binary.LittleEndian.Uint64(b[8:]))
	f.ino = binary.LittleEndian.Uint64(b[16:])
	return f, true
}

// sameIds reports whether the index in job directory jd is ids, byte for
// byte.
func sameIds(jd dirh, ids []byte) bool {
	fd, st, err := openRegular(jd, idsName)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	if st.Size != int64(len(ids)) {
		return false
	}
	buf := make([]byte, logReadSize)
	for at := 0; at < len(ids); {
		n, err := unix.Pread(fd, buf[:min(len(buf), len(ids)-at)], int64(at))
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 || !bytes.Equal(buf[:n], ids[at:at+n]) {
			return false
		}
		at += n
	}
	return true
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

// searchIds reads the index in job directory jd for the id whose hash is
// h, a window at a time (a lookup holds 64 KiB of it, not 1.6 MB at
// 100,000 entries): the index's header (f, entries left out), the
// offsets it gives for the id, and whether it is an index.
func searchIds(jd dirh, h uint64) (f idsFile, offs []int64, ok bool) {
	fd, st, err := openRegular(jd, idsName)
	if err != nil {
		return f, nil, false
	}
	defer unix.Close(fd)
	if st.Size > maxIdsSize {
		return f, nil, false
	}
	buf := make([]byte, logReadSize)
	have, at := 0, int64(0) // buf[:have] is unread, from offset at
	for {
		n, err := unix.Pread(fd, buf[have:], at+int64(have))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return f, nil, false
		}
		have += n
		from := 0
		if at == 0 {
			if have < idsHead && n > 0 {
				continue
			}
			if f, ok = parseIdsHeader(buf[:have]); !ok {
				return f, nil, false
			}
			from = idsHead
		}
		whole := from + (have-from)/idsEntry*idsEntry
		offs = append(offs, idsFor(buf[from:whole], h)...)
		if n == 0 {
			return f, offs, true
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
	ids = idsHeader(l)
	end, err = l.scan(l.first, func(e entry) error {
		if terminalFrame(e) {
			ids = appendIdsEntry(ids, e.id, e.off)
		}
		return nil
	})
	return ids, end, err
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
// terminal frame, at loc.off. Where the index cannot take it (missing,
// damaged, of another generation, with another link), it is written anew
// from the log. Called with the lock held, the frame written. Not
// flushed (see the index's doc), unless the boot is unknown: then no new
// boot can be told from this one, and the entry is flushed before the
// link goes.
func (s *Store) appendIds(loc *located) error {
	sync := !s.linksKept()
	entry := appendIdsEntry(nil, []byte(loc.rec.ID), loc.off)
	fd, err := unix.Openat(loc.jd.FD, idsName, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err == nil {
		ok := false
		var st unix.Stat_t
		head := make([]byte, idsHead)
		if unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink == 1 && st.Size >= idsHead {
			if n, err := unix.Pread(fd, head, 0); err == nil && n == idsHead && bytes.Equal(head, idsHeader(loc.log)) {
				ok = true
			}
		}
		if ok {
			at := idsHead + (st.Size-idsHead)/idsEntry*idsEntry
			err = pwriteAll(fd, entry, at)
			if err == nil && sync {
				err = durable.Fdatasync(fd)
			}
			unix.Close(fd)
			if err != nil {
				return &os.PathError{Op: "write", Path: loc.jd.Show(idsName), Err: err}
			}
			return nil
		}
		unix.Close(fd)
	}
	ids, _, err := idsOfLog(loc.log)
	if err != nil {
		return err
	}
	return writeIds(loc.jd, ids, sync)
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
// indexes of the jobs (write: its log open for appending, under the
// lock); a job whose index cannot be trusted has its log read.
func (s *Store) locateFinished(id string, write bool) (*located, error) {
	jobs, err := s.jobNames()
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
		for _, off := range offs {
			if e, err := l.readAt(off); err != nil || string(e.id) != id || e.kind == kindHeader {
				continue // another id of the same hash, or a stale entry
			}
			if err := loc.find(id, l.gen, off); err == nil {
				return loc, nil
			}
		}
		loc.close()
		return nil, notFound
	}
	// An index not to be trusted (a prune or a write of it cut short):
	// the log, then.
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
