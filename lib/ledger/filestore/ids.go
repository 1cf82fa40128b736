package filestore

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/internal/durable"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/filestore/jobindex"
	"github.com/tether-sh/tether/lib/ledger/filestore/joblog"
)

// Each job's index of finished executions, jobs/JOB/_ids, is a
// jobindex file (its format and invariants are that package's doc). Here
// the store reads it through its checked opens, writes it, and keeps it
// in step with the log:
//   - A transition that makes an execution terminal appends its entry
//     (or writes the index anew) after its frame (the commit), and only
//     then removes the execution's link from active/. So, during a boot,
//     every finished execution is in its job's index or still has its
//     link in active/ (a hint that leads to its newest version): a reader
//     that finds neither has no such execution in the job. A writer that
//     cannot append (the index is missing, damaged, of another
//     generation, has another link) writes it anew from the log; one that
//     cannot write it leaves the link. Not flushed (unless the boot id is
//     unknown: appendIds), as links are not.
//   - Prune removes the index before it renames the log's next
//     generation into place (or stops), and writes the next one's after;
//     the first writer of a boot writes every job's from its log
//     (relinkAll).

// idsOf is an index of l holding ents, which it sorts.
func idsOf(l *jobLog, ents []jobindex.Ent) []byte { return jobindex.Encode(l.Gen, l.Ino, ents) }

// readIds reads the index in job directory jd; ok is false when there is
// none or it is not one.
func readIds(jd dirh) (jobindex.File, bool) {
	b, err := readSmall(jd, jobindex.Name, jobindex.MaxSize)
	if err != nil {
		return jobindex.File{}, false
	}
	return jobindex.Parse(b)
}

// sameIds reports whether the index in job directory jd indexes l and
// holds the entries ents, sorted, hold (jobindex.File.Holds).
func sameIds(jd dirh, l *jobLog, ents []jobindex.Ent) bool {
	f, ok := readIds(jd)
	return ok && f.Of(l.Gen, l.Ino) && f.Holds(ents)
}

// logIno returns the inode of the log in job directory jd (0: none).
func logIno(jd dirh) uint64 {
	var st unix.Stat_t
	if unix.Fstatat(jd.FD, joblog.Name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return 0
	}
	return st.Ino
}

// openIds opens the index in job directory jd and reads its header: its
// descriptor (the caller closes it), the header, and the file's size at
// its fstat. ok is false, and nothing left open, when jd has no index of
// this format.
func openIds(jd dirh) (fd int, f jobindex.File, size int64, ok bool) {
	fd, st, err := openRegular(jd, jobindex.Name)
	if err != nil {
		return -1, f, 0, false
	}
	if f, ok = jobindex.ReadHeader(fd, st.Size); ok {
		return fd, f, st.Size, true
	}
	unix.Close(fd)
	return -1, f, 0, false
}

// searchIds looks in the index in job directory jd for the id whose hash
// is h (jobindex.Search). It returns the index's header (f, entries left
// out), the offsets it gives for the id, and whether it is an index.
func searchIds(jd dirh, h uint64) (f jobindex.File, offs []int64, ok bool) {
	fd, f, size, ok := openIds(jd)
	if !ok {
		return f, nil, false
	}
	defer unix.Close(fd)
	offs, ok = jobindex.Search(fd, f, size, h)
	return f, offs, ok
}

// terminalFrame reports whether e makes its execution terminal: a claim
// of a terminal record (prune's next generation holds those) or an
// update to a terminal status. A terminal version is never followed by
// another, so each finished execution has exactly one.
func terminalFrame(e joblog.Entry) bool {
	return (e.Kind == joblog.KindClaim || e.Kind == joblog.KindUpdate) && terminalDelta(e.Data)
}

// idsOfLog returns the index of l built from its frames (from its
// header up to end, where the walk stopped) and the walk's error.
func idsOfLog(l *jobLog) (ids []byte, end int64, err error) {
	var ents []jobindex.Ent
	end, err = l.Scan(l.First, func(e joblog.Entry) error {
		if terminalFrame(e) {
			ents = append(ents, jobindex.EntOf(e.ID, e.Off))
		}
		return nil
	})
	return idsOf(l, ents), end, err
}

// writeIds writes job's index (jd its directory), a temporary file
// renamed into place: with sync, fdatasync'ed before and jd fsync'ed
// after.
func writeIds(jd dirh, ids []byte, sync bool) error {
	if err := durable.Write(jd, jobindex.Name, ids, sync); err != nil {
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
	ent := jobindex.EntOf(loc.rec.ID, loc.off)
	fd, err := unix.Openat(loc.jd.FD, jobindex.Name, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err == nil {
		f, size, ok := jobindex.ToAppend(fd, loc.log.Gen, loc.log.Ino)
		switch {
		case ok && size/jobindex.EntrySize-f.Sorted < int64(jobindex.TailMax):
			err = durable.PwriteAll(fd, jobindex.Put(nil, ent), jobindex.Head+size)
			if err == nil && sync {
				err = durable.Fdatasync(fd)
			}
			unix.Close(fd)
			if err != nil {
				return &os.PathError{Op: "write", Path: loc.jd.Show(jobindex.Name), Err: err}
			}
			return nil
		case ok:
			b := make([]byte, size)
			err = durable.PreadFull(fd, b, jobindex.Head)
			unix.Close(fd)
			if err == nil {
				return writeIds(loc.jd, idsOf(loc.log, jobindex.Merge(jobindex.Ents(b), f.Sorted, ent)), sync)
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
	h := jobindex.Hash(id)
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
	if trusted && f.Ino == logIno(jd) {
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
	if trusted && f.Of(l.Gen, l.Ino) {
		damaged := false
		for _, off := range offs {
			e, err := l.ReadAt(off)
			if err != nil {
				// No frame where the index says: the log or the index is
				// damaged, and the walk below tells which.
				damaged = true
				continue
			}
			if string(e.ID) != id || e.Kind == joblog.KindHeader {
				continue // another id of the same hash
			}
			if err := loc.find(id, l.Gen, off); err == nil {
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
	_, err := l.Scan(l.First, func(e joblog.Entry) error {
		if string(e.ID) != id || (e.Kind != joblog.KindClaim && e.Ref != loc.claimOff) || e.Kind == joblog.KindHeader {
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
