package filestore

import (
	"bytes"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/filestore/joblog"
)

// What the cached summary keeps against damage (damage.go): the live
// executions and the last instant at its end, and its rewriting by a
// reader that had to recount it.

// note takes frame e, counted, into js's live executions and last
// instant; r is the version it made terminal, if it did.
func (js *jobSummary) note(e joblog.Entry, r ledger.Record) {
	if r.ID != "" {
		delete(js.live, r.ID)
	}
	if e.Kind != joblog.KindClaim {
		return
	}
	if r.ID == "" && !terminalDelta(e.Data) {
		if js.live == nil {
			js.live = map[string]int64{}
		}
		js.live[string(e.ID)] = e.Off
	}
	if t, ok := claimInstant(e.Data); ok && t.After(js.lastInstant) {
		js.lastInstant = t
	}
}

// claimInstant reads the instant of a claim frame's record from its
// bytes (its encoding's "instant" key), not decoding it.
func claimInstant(d []byte) (time.Time, bool) {
	const key = `"instant":"`
	i := bytes.Index(d, []byte(key))
	if i < 0 {
		return time.Time{}, false
	}
	v := d[i+len(key):]
	j := bytes.IndexByte(v, '"')
	if j < 0 {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(v[:j]))
	return t, err == nil
}

// mendSummary caches js, job's summary counted up to end of its log l
// (in jd), for a reader that found no cache worth keeping, so that one
// lost cache costs one recount, not one for every read until the job's
// next write. Only where the reader may write it: the store's owner by
// its own rights (not a group reader, not root reading as the owner,
// which write nothing), and under the lock, taken only if it is free at
// once (a writer holding it will settle the cache itself), the log still
// the one counted.
func (s *Store) mendSummary(jd dirh, l *jobLog, js jobSummary, end int64) {
	if s.foreign || os.Getuid() != os.Geteuid() {
		return
	}
	fd, err := unix.Openat(s.root.FD, lockName, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	if flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil || logIno(jd) != l.Ino {
		return
	}
	cacheSummary(jd, js, l.Gen, end)
}
