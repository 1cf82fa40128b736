//go:build linux

package filestore

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/ledger"
)

// cycle claims, starts and finishes one execution of job and checks what
// each step left in exec/ID.
func cycle(t *testing.T, s *Store, job string) ledger.Record {
	t.Helper()
	code := 0
	r := mustClaim(t, s, job, ledger.ClaimOptions{})
	if got := must(t)(s.Get(r.ID)); got.Status != ledger.Claimed {
		t.Fatalf("after claim, %s is %s", r.ID, got.Status)
	}
	must(t)(s.Start(r.ID, nil))
	if got := must(t)(s.Get(r.ID)); got.Status != ledger.Running {
		t.Fatalf("after start, %s is %s", r.ID, got.Status)
	}
	must(t)(s.Finish(r.ID, ledger.Completed, &code, ""))
	got := must(t)(s.Get(r.ID))
	if got.Status != ledger.Completed || got.ExitCode == nil || *got.ExitCode != 0 {
		t.Fatalf("after finish, %s is %s", r.ID, got.Status)
	}
	return got
}

func inode(t *testing.T, p string) (ino uint64, nlink uint64) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	if st.Mode&0o777 != 0o600 {
		t.Errorf("%s has mode %04o; want 0600", p, st.Mode&0o777)
	}
	return st.Ino, uint64(st.Nlink)
}

// TestSpareExchange checks the in-place update path: the two markers are
// one empty file, a record's versions swap inodes with the spare, and no
// record ever shares its inode with the spare.
func TestSpareExchange(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	r := mustClaim(t, s, "j", ledger.ClaimOptions{})
	rec, n := inode(t, s.path(execDir, r.ID))
	if n != 1 {
		t.Errorf("record: %d links; want 1 (the markers are a file of their own)", n)
	}
	marker, n := inode(t, s.path(jobsDir, "j", r.ID))
	if marker == rec || n != 2 {
		t.Errorf("membership marker: inode %d (%d links); want one of its own (the record's is %d), 2 links", marker, n, rec)
	}
	if fi, err := os.Stat(s.path(jobsDir, "j", r.ID)); err != nil || fi.Size() != 0 {
		t.Errorf("membership marker: %v, %v; want an empty file", fi, err)
	}
	if m, _ := inode(t, s.path(activeDir, activeName(r.ID, "j"))); m != marker {
		t.Errorf("active marker: inode %d; want the membership marker's %d", m, marker)
	}
	must(t)(s.Start(r.ID, nil))
	if s.rep.NoExchange() {
		t.Skip("renameat2(RENAME_EXCHANGE) unsupported here")
	}
	now, _ := inode(t, s.path(execDir, r.ID))
	spare, _ := inode(t, s.path(execDir, spareName))
	if spare != rec || now == rec {
		t.Errorf("after start: record inode %d, spare %d; want the spare to hold the claim's inode %d", now, spare, rec)
	}
	for i := 0; i < 5; i++ {
		cycle(t, s, "j")
	}
	names, _ := readNames(s.exec)
	seen := map[uint64]string{}
	for _, n := range names {
		ino, _ := inode(t, s.path(execDir, n))
		if other, ok := seen[ino]; ok {
			t.Errorf("%s and %s share inode %d", n, other, ino)
		}
		seen[ino] = n
		if strings.HasPrefix(n, tmpPrefix) && n != spareName {
			t.Errorf("leftover %s", n)
		}
	}
	// A spare that is not a regular file is not used (nor followed).
	os.Remove(s.path(execDir, spareName))
	os.Symlink("/etc/passwd", s.path(execDir, spareName))
	cycle(t, s, "j")
	if fi, err := os.Lstat(s.path(execDir, spareName)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("planted spare symlink was replaced: %v, %v", fi, err)
	}
	// Prune removes the spare like any leftover; the next update makes one.
	must(t)(s.Finish(mustClaim(t, s, "k", ledger.ClaimOptions{}).ID, ledger.Failed, nil, ""))
	if _, err := ledger.Pruned(s, ledger.PruneOptions{Keep: 100}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(s.path(execDir, spareName)); !os.IsNotExist(err) {
		t.Errorf("spare after prune: %v; want it removed", err)
	}
	cycle(t, s, "j")
	if _, err := ledger.Pruned(s, ledger.PruneOptions{}); err != nil {
		t.Fatal(err)
	}
	if list, err := ledger.List(s, ledger.Filter{}); err != nil || len(list) != 1 || list[0].ID != r.ID {
		t.Errorf("List after prune = %d records, %v; want only the running %s", len(list), err, r.ID)
	}
}

// TestExchangeFallback runs the write paths where renameat2 RENAME_EXCHANGE
// is unsupported: records are then replaced by temp file and rename, with
// the same results.
func TestExchangeFallback(t *testing.T) {
	t.Parallel()
	for _, errno := range []unix.Errno{unix.EINVAL, unix.ENOSYS, unix.EOPNOTSUPP} {
		s := newStore(t)
		calls := 0
		s.rep.Exchange = func(_ int, a, b string) error { calls++; return errno }
		r := cycle(t, s, "j")
		if calls != 1 || !s.rep.NoExchange() {
			t.Fatalf("%v: exchange called %d times, noExchange %v; want once, then not again", errno, calls, s.rep.NoExchange())
		}
		cycle(t, s, "j")
		if _, err := s.Recover(0); err != nil {
			t.Fatal(err)
		}
		if calls != 1 {
			t.Errorf("%v: exchange called again after it was found unsupported", errno)
		}
		names, _ := readNames(s.exec)
		for _, n := range names {
			if strings.HasPrefix(n, tmpPrefix) {
				t.Errorf("%v: leftover %s after fallback writes", errno, n)
			}
		}
		if l := must(t)(s.Latest("j")); l.Status != ledger.Completed || l.ID <= r.ID {
			t.Errorf("%v: Latest = %s %s", errno, l.ID, l.Status)
		}
		// A new Store (a new process) tries the exchange again, once.
		s2, _ := Open(s.Location())
		s2.rep.Exchange = s.rep.Exchange
		cycle(t, s2, "j")
		if calls != 2 {
			t.Errorf("%v: a new store called exchange %d times in all; want 2", errno, calls)
		}
	}
	// Any other error fails the write and leaves the record as it was.
	s := newStore(t)
	r := mustClaim(t, s, "j", ledger.ClaimOptions{})
	s.rep.Exchange = func(_ int, a, b string) error { return unix.EIO }
	if _, err := s.Start(r.ID, nil); err == nil || !strings.Contains(err.Error(), "input/output error") {
		t.Fatalf("Start with a failing exchange = %v; want the I/O error", err)
	}
	if got := must(t)(s.Get(r.ID)); got.Status != ledger.Claimed || s.rep.NoExchange() {
		t.Fatalf("after a failed exchange, %s is %s (noExchange %v); want claimed", r.ID, got.Status, s.rep.NoExchange())
	}
}

// TestLatestThroughSpare checks that claims rotate a job's _latest pointer
// between two inodes (the pointer and the job's spare) instead of
// allocating one per claim and freeing the old one, and that the pointer
// is right after each of them.
func TestLatestThroughSpare(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	latest, spare := s.path(jobsDir, "j", latestName), s.path(jobsDir, "j", spareName)
	inodes := map[uint64]bool{}
	for i := 0; i < 6; i++ {
		r := mustClaim(t, s, "j", ledger.ClaimOptions{})
		if got := must(t)(s.Latest("j")); got.ID != r.ID {
			t.Fatalf("Latest after claim %d = %s; want %s", i, got.ID, r.ID)
		}
		ino, _ := inode(t, latest)
		inodes[ino] = true
		if i > 0 {
			if s.rep.NoExchange() {
				t.Skip("renameat2(RENAME_EXCHANGE) unsupported here")
			}
			ino, _ := inode(t, spare)
			inodes[ino] = true
		}
	}
	if len(inodes) != 2 {
		t.Errorf("_latest and the job's spare used %d inodes over 6 claims; want 2", len(inodes))
	}
}
