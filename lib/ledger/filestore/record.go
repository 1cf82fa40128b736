package filestore

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/filestore/jobindex"
	"github.com/tether-sh/tether/lib/ledger/filestore/joblog"
	"github.com/tether-sh/tether/lib/ledger/filestore/wire"
)

// A live execution is found by its link, a symbolic link named by its id
// whose target ("GEN:OFF:JOB", hintOf) says which job's log holds it and
// where its newest version was: active/ID while it may still be claimed or
// running; a finished one by its job's index (ids.go). Nothing ever
// follows a link: it is read (readlinkat) and its target parsed. A link
// is a hint, verified against the log: a frame at OFF of another
// generation or execution makes the reader walk the whole log, a newer
// version after OFF is found by reading on to the end (terminal versions
// are final, so a terminal record's link is exact).

// located is an execution as found in its job's log.
type located struct {
	rec   ledger.Record // its newest version
	claim ledger.Record // the version deltas are written against
	job   string
	// claimOff is its claim frame's offset, off its newest frame's.
	claimOff, off int64
	active        bool // its link is in active/
	// jd and log are its job's directory and log, open; with write, the
	// log is open for appending. close releases them.
	jd  dirh
	log *jobLog
}

func (l *located) close() {
	if l.log != nil {
		l.log.Close()
	}
	if l.jd.FD >= 0 {
		unix.Close(l.jd.FD)
	}
}

// readLink returns the target of execution id's link and whether it is in
// active/. A link that is not a symbolic link is ErrCorrupt; none is
// ErrNotFound.
func (s *Store) readLink(id string) (target string, active bool, err error) {
	buf := make([]byte, 256)
	d := s.active
	n, err := unix.Readlinkat(d.FD, id, buf)
	switch err {
	case nil:
		if n == len(buf) {
			return "", false, fmt.Errorf("%w: %s: link too long", ledger.ErrCorrupt, d.Show(id))
		}
		return string(buf[:n]), true, nil
	case unix.ENOENT:
		// A link leaves active/ only once its execution is in its job's
		// index: looked for after the link, one that finishes meanwhile
		// is found.
		return "", false, fmt.Errorf("%w %s", ledger.ErrNotFound, id)
	case unix.EINVAL:
		return "", false, fmt.Errorf("%w: %s is not a symbolic link", ledger.ErrCorrupt, d.Show(id))
	default:
		return "", false, &os.PathError{Op: "readlink", Path: d.Show(id), Err: err}
	}
}

// parseHint reads a link's target.
func parseHint(t string) (gen, off int64, job string, ok bool) {
	g, rest, ok1 := strings.Cut(t, ":")
	o, job, ok2 := strings.Cut(rest, ":")
	if !ok1 || !ok2 || ledger.ValidJob(job) != nil {
		return 0, 0, "", false
	}
	gen, err1 := strconv.ParseInt(g, 10, 64)
	off, err2 := strconv.ParseInt(o, 10, 64)
	if err1 != nil || err2 != nil || off < 0 {
		return 0, 0, "", false
	}
	return gen, off, job, true
}

// setLink points execution id's link in d at target: a new link renamed
// over the old one, so a reader finds the old or the new. Not flushed:
// see "Crash safety".
func setLink(d dirh, name, target string) error {
	tmp := tmpPrefix + name
	err := unix.Symlinkat(target, d.FD, tmp)
	if err == unix.EEXIST {
		unix.Unlinkat(d.FD, tmp, 0)
		err = unix.Symlinkat(target, d.FD, tmp)
	}
	if err != nil {
		return &os.PathError{Op: "symlink", Path: d.Show(tmp), Err: err}
	}
	if err := unix.Renameat(d.FD, tmp, d.FD, name); err != nil {
		unix.Unlinkat(d.FD, tmp, 0)
		return &os.PathError{Op: "rename", Path: d.Show(tmp), Err: err}
	}
	return nil
}

// readRecord returns execution id's newest version.
func (s *Store) readRecord(id string) (ledger.Record, error) {
	loc, err := s.locate(id, false)
	if err != nil {
		return ledger.Record{}, err
	}
	loc.close()
	return loc.rec, nil
}

// locate finds execution id (write: its log open for appending, under the
// lock). The caller closes what it returns.
func (s *Store) locate(id string, write bool) (*located, error) {
	target, active, err := s.readLink(id)
	if errors.Is(err, ledger.ErrNotFound) {
		if !s.linksWhole() {
			return s.locateInLogs(id, write)
		}
		return s.locateFinished(id, write)
	}
	if err != nil {
		return nil, err
	}
	gen, off, job, ok := parseHint(target)
	if !ok {
		return nil, fmt.Errorf("%w: %s: bad link %q", ledger.ErrCorrupt, s.active.Show(id), target)
	}
	link := s.active.Show(id)
	jd, err := openSubdir(s.jobs, job)
	if errors.Is(err, os.ErrNotExist) {
		// A claim makes its job's folder and log before its link, and
		// no job's folder is removed while it has executions.
		return nil, damagef("%s names job %s, which has no folder (run ledger verify)", link, job)
	}
	if err != nil {
		return nil, err
	}
	loc := &located{job: job, active: active, jd: jd}
	if loc.log, err = openLog(jd, job, write); err != nil {
		loc.close()
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w %s", ledger.ErrNotFound, id)
		}
		return nil, err
	}
	if gen == loc.log.Gen && off > loc.log.End {
		// A link names the log's end when it is made, and a log only
		// grows: the log was cut short (damage.go).
		loc.close()
		return nil, damagef("%s names offset %d of %s, which ends at offset %d (cut short? run ledger verify)", link, off, loc.log.Path, loc.log.End)
	}
	if err := loc.find(id, gen, off); err != nil {
		loc.close()
		if errors.Is(err, ledger.ErrNotFound) && hinted(id) && !ledger.IDHints(id, job) {
			// Not a claim that died before its frame: that one's link
			// names its own job, which its id's hint names.
			return nil, damagef("%s names job %s, whose log does not hold it and whose hint its id does not bear (another job's frame? run ledger verify)", link, job)
		}
		return nil, err
	}
	return loc, nil
}

// hinted reports whether id is of ledger.NewID's form, whose last two
// digits are its job's hint.
func hinted(id string) bool { return len(id) == 20 && id[13] == '-' }

// find reads execution id's versions from loc's log: from the frame at off
// (when of generation gen and of id) on, or else the whole log.
func (loc *located) find(id string, gen, off int64) error {
	l := loc.log
	var e joblog.Entry
	err := joblog.ErrFrame
	if gen == l.Gen && off >= l.First {
		if e, err = l.ReadAt(off); err == nil && (string(e.ID) != id || e.Kind == joblog.KindHeader) {
			err = joblog.ErrFrame
		}
	}
	if err == nil {
		err = loc.take(e)
	}
	if err == nil && !loc.rec.Status.Terminal() {
		_, err = l.Scan(e.End, func(e joblog.Entry) error {
			if string(e.ID) == id && e.Kind == joblog.KindUpdate && e.Ref == loc.claimOff {
				return loc.take(e)
			}
			return nil
		})
	}
	if errors.Is(err, joblog.ErrFrame) {
		// The hint is stale: the whole log, then.
		loc.claimOff, loc.rec = -1, ledger.Record{}
		_, err = l.Scan(l.First, func(e joblog.Entry) error {
			if string(e.ID) == id && (e.Kind == joblog.KindClaim || e.Ref == loc.claimOff) {
				return loc.take(e)
			}
			return nil
		})
		if err == nil && loc.claimOff < 0 {
			// A link made by a claim that died before its frame.
			return fmt.Errorf("%w %s", ledger.ErrNotFound, id)
		}
	}
	return err
}

// take makes e, a frame of loc's execution, its newest version.
func (loc *located) take(e joblog.Entry) error {
	l := loc.log
	switch e.Kind {
	case joblog.KindClaim:
		r, err := wire.Decode(e.Data, string(e.ID))
		if err != nil {
			return fmt.Errorf("%s at offset %d: %w", l.Path, e.Off, err)
		}
		loc.claim, loc.rec, loc.claimOff, loc.off = r, r, e.Off, e.Off
		return nil
	case joblog.KindUpdate:
		if loc.claimOff != e.Ref {
			// Reading the claim may move the window e is in.
			data, id := append([]byte(nil), e.Data...), string(e.ID)
			c, err := l.ReadAt(e.Ref)
			if err != nil || c.Kind != joblog.KindClaim || string(c.ID) != id {
				return joblog.ErrFrame
			}
			if err := loc.take(c); err != nil {
				return err
			}
			e.Data = data
		}
		r, err := wire.ApplyDelta(loc.claim, e.Data)
		if err != nil {
			return fmt.Errorf("%s at offset %d: %w", l.Path, e.Off, err)
		}
		loc.rec, loc.off = r, e.Off
		return nil
	}
	return joblog.ErrFrame
}

// writeVersion appends next, the new version of loc's execution, to its
// job's log and points its link at it (indexed, its link removed, when
// next is terminal). Called with the lock held, loc located for writing.
func (s *Store) writeVersion(loc *located, next ledger.Record) error {
	if err := next.Validate(); err != nil {
		return fmt.Errorf("internal error: refusing to write an illegal record: %w", err)
	}
	off, err := loc.log.Append(joblog.KindUpdate, next.ID, loc.claimOff, wire.EncodeDelta(next, loc.claim))
	if err != nil {
		return fmt.Errorf("writing record %s: %w", next.ID, err)
	}
	reached("appended")
	loc.rec, loc.off = next, off
	if next.Status.Terminal() {
		s.retire(loc)
	} else {
		// Best effort: a stale link costs a longer read, never a wrong one.
		setLink(s.active, next.ID, hintOf(loc.log.Gen, off, loc.job))
	}
	return nil
}

// syncDirs flushes the given directories at once.
func syncDirs(ds ...dirh) error {
	errs := make(chan error, len(ds))
	for _, d := range ds[1:] {
		go func() { errs <- d.Sync() }()
	}
	err := ds[0].Sync()
	for range ds[1:] {
		err = errors.Join(err, <-errs)
	}
	return err
}

// stored reports whether execution id is in the store: it has a link, or
// is in its job's index (or, while those may not be whole, has a claim in
// a log). An error is a store it could not read.
func (s *Store) stored(id string) (bool, error) {
	find := s.locateFinished
	if !s.linksWhole() {
		find = s.locateInLogs
	}
	return s.storedBy(id, func() (*located, error) { return find(id, false) })
}

// storedIn is stored, of the finished executions only job's: its index
// (or, while the links may not be whole, its log).
func (s *Store) storedIn(id, job string) (bool, error) {
	return s.storedBy(id, func() (*located, error) {
		if s.linksWhole() {
			return s.findFinished(job, id, jobindex.Hash(id), false)
		}
		jd, l, ok, err := s.openJob(job)
		if err != nil || !ok {
			return nil, cmp.Or(err, fmt.Errorf("%w %s", ledger.ErrNotFound, id))
		}
		loc := &located{job: job, jd: jd, log: l}
		if err := loc.walkFor(id); err != nil {
			loc.close()
			return nil, err
		}
		return loc, nil
	})
}

// storedBy reports whether execution id has a link, or else whether find
// finds it finished.
func (s *Store) storedBy(id string, find func() (*located, error)) (bool, error) {
	var st unix.Stat_t
	switch err := unix.Fstatat(s.active.FD, id, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil:
		return true, nil
	case !errors.Is(err, unix.ENOENT):
		return false, &os.PathError{Op: "stat", Path: s.active.Show(id), Err: err}
	}
	loc, err := find()
	if errors.Is(err, ledger.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	loc.close()
	return true, nil
}

// closeFD closes a descriptor whose close cannot fail usefully.
func closeFD(fd int) { unix.Close(fd) }
