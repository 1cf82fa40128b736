package filestore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/filestore/jobindex"
	"github.com/tether-sh/tether/lib/ledger/filestore/joblog"
)

// Damage a crash cannot make, found from the evidence the store keeps
// beside a job's log. A log only grows (but for a torn tail, at most one
// frame, and prune's next generation, a new generation), and every file
// derived from it is written after the frames it names are durable: the
// cached summary counts frames up to an offset, each index entry names a
// frame that made an execution terminal, each link an offset the log had
// reached when it was made. So a log that ends before what they name, or
// is missing while they remain, was cut short or removed by something
// else than the store (an rm, a truncate, a partial restore): the
// executions after the cut are lost from the log, and reading on would
// run their slots again or count them as never run. Readers report it
// (ledger.ErrCorrupt, exit 3), and writers refuse to append, as for a
// frame damaged in the middle of a log.
//
// The checks are bounded: a stat or two when the log is missing, and for
// a log, the summary's first line and one frame read, the index's header
// and last entry and one frame read.

// damagef is ErrCorrupt saying what is wrong with the store.
func damagef(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ledger.ErrCorrupt, fmt.Sprintf(format, a...))
}

// missingLog is the error for job's log missing from its directory jd:
// os.ErrNotExist (a job that has none: its directory was made by a claim
// that has not yet created it) unless the files that are written only
// once the log exists are there: then the log was removed, ErrCorrupt.
func missingLog(jd dirh, notExist error) error {
	var found []string
	for _, n := range []string{summaryName, jobindex.Name} {
		var st unix.Stat_t
		if unix.Fstatat(jd.FD, n, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			found = append(found, n)
		}
	}
	if len(found) == 0 {
		return notExist
	}
	return damagef("%s is missing, but its %s remain (removed? restore it, or run ledger verify)", jd.Show(joblog.Name), strings.Join(found, " and "))
}

// checkHeld checks that l, job's log in its directory jd, still holds
// what its cached summary and its index say it held (see above). end is
// how far the caller may read: the valid end for a writer, the size for
// a reader.
func checkHeld(jd dirh, l *jobLog, job string) error {
	// A reader takes no lock: a writer may have appended (and cached or
	// indexed what it appended) since the reader saw the log's end.
	// What lies past that end is judged by the log's size now.
	appended := func(off int64) bool { return off >= l.End && off < l.size() }
	if gen, end, ok := cacheEnd(jd); ok && gen == l.Gen && end > l.First && !appended(end-1) {
		if end > l.End {
			return damagef("%s ends at offset %d, before its summary's count of frames up to offset %d (cut short? run ledger verify)", l.Path, l.End, end)
		}
		if _, err := l.LastBefore(end); err != nil {
			return damagef("%s: no valid frame ends at offset %d, where its summary's count of frames ends (cut short or overwritten? run ledger verify)", l.Path, end)
		}
	}
	fd, f, size, ok := openIds(jd)
	if !ok {
		return nil
	}
	defer unix.Close(fd)
	// Of the log's generation, whatever its inode: a copy of the log (a
	// restore, a snapshot detached) holds its frames where it did.
	if f.Gen != l.Gen || size < jobindex.Head+jobindex.EntrySize {
		return nil
	}
	var ent [jobindex.EntrySize]byte
	if n, err := unix.Pread(fd, ent[:], size-jobindex.EntrySize); err != nil || n != len(ent) {
		return nil
	}
	off := int64(binary.LittleEndian.Uint64(ent[8:]))
	if appended(off) {
		return nil
	}
	if off >= l.End {
		return damagef("%s ends at offset %d, before the frame at offset %d its index names (cut short? run ledger verify)", l.Path, l.End, off)
	}
	if e, err := l.ReadAt(off); err != nil || !terminalFrame(e) {
		return damagef("%s: no finish at offset %d, where its index names one (cut short or overwritten? run ledger verify)", l.Path, off)
	}
	return nil
}

// cacheEnd reads where job's cached summary (in jd) was counted up to:
// its first line, once its CRC is checked. ok is false when there is no
// cache that can be trusted.
func cacheEnd(jd dirh) (gen, end int64, ok bool) {
	b, err := readSmall(jd, summaryName, maxSummarySize)
	if err != nil {
		return 0, 0, false
	}
	body, sum, found := bytes.Cut(b, []byte("crc "))
	if !found || strings.TrimSpace(string(sum)) != fmt.Sprintf("%08x", joblog.Checksum(body)) {
		return 0, 0, false
	}
	at, _, _ := bytes.Cut(body, []byte("\n"))
	if _, err := fmt.Sscanf(string(at), "at %d %d", &gen, &end); err != nil {
		return 0, 0, false
	}
	return gen, end, true
}

// relinkLive gives each live execution of job that the log holds (its
// cached summary's and those claimed after it: no walk of the whole log
// while the cache holds) its link in active/ where it has none: a link
// removed by hand must not hide a live execution from claim --exclusive,
// --every and recover, which read active/. A cache missing or stale is
// written anew (one recount, under the lock). Called with the lock held.
func (s *Store) relinkLive(job string) error {
	jd, l, ok, err := s.openJob(job)
	if err != nil || !ok {
		return err
	}
	defer closeDir(jd)
	defer l.Close()
	js, end, stale, err := countedFrom(jd, l, job)
	if err != nil {
		return err
	}
	if stale {
		cacheSummary(jd, js, l.Gen, end)
	}
	buf := make([]byte, 256)
	for id, off := range js.live {
		n, err := unix.Readlinkat(s.active.FD, id, buf)
		if err == nil {
			if _, _, j, ok := parseHint(string(buf[:n])); ok && j != job {
				return damagef("%s names job %s, but %s holds it live (run ledger verify)", s.active.Show(id), j, l.Path)
			}
		}
		if err != unix.ENOENT {
			continue
		}
		if err := setLink(s.active, id, hintOf(l.Gen, off, job)); err != nil {
			return err
		}
	}
	return nil
}

// unlinked reports a live execution of job's log (logLive, the cached
// summary's and the frames' after it) that has no link in active/ (live,
// the linked ones a reader found): removed by hand, it is hidden from
// list --status and the running count, which read active/, until claim
// --exclusive, --every or recover relinks it. Only while the links are
// whole (a new boot's may not yet be). The link and the record are read
// again first: a claim or finish may have come between the reader's look
// at active/ and its look at the log.
func (s *Store) unlinked(job string, logLive map[string]int64, live []ledger.Record) error {
	if len(logLive) == 0 || !s.linksWhole() {
		return nil
	}
	seen := make(map[string]bool, len(live))
	for _, r := range live {
		seen[r.ID] = true
	}
	buf := make([]byte, 256)
	for id := range logLive {
		if seen[id] {
			continue
		}
		if _, err := unix.Readlinkat(s.active.FD, id, buf); err != unix.ENOENT {
			continue
		}
		if r, err := s.readRecord(id); err == nil && r.Status.Terminal() {
			continue
		}
		return damagef("%s: execution %s of job %s is live in its log, but has no link (removed? ledger recover relinks it)", s.active.Show(id), id, job)
	}
	return nil
}
