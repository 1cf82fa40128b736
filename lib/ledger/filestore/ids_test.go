//go:build linux

package filestore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/filestore/jobindex"
	"github.com/tether-sh/tether/lib/ledger/filestore/joblog"
	"github.com/tether-sh/tether/lib/ledger/ledgertest"
)

// finishedIn claims n executions of job in s and fails them all.
func finishedIn(t *testing.T, s *Store, job string, n int) []ledger.Record {
	t.Helper()
	var out []ledger.Record
	for i := 0; i < n; i++ {
		r := mustClaim(t, s, job, ledger.ClaimOptions{})
		out = append(out, must(t)(s.Finish(r.ID, ledger.Failed, nil, "x")))
	}
	return out
}

// checkGets checks that Get finds each of recs as it is.
func checkGets(t *testing.T, s *Store, what string, recs []ledger.Record) {
	t.Helper()
	for _, r := range recs {
		if got, err := s.Get(r.ID); err != nil || got.Status != r.Status {
			t.Errorf("%s: Get(%s) = %v, %v; want %s", what, r.ID, got.Status, err, r.Status)
		}
	}
}

// TestIndexUntrusted: an index a reader cannot trust (missing, of another
// generation, damaged, a symbolic link, a directory) makes it read the
// job's log, and the next finish in the job writes the index anew,
// whole; a stale entry of the same hash is passed over.
func TestIndexUntrusted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		spoil func(path string) error
	}{
		{"missing", os.Remove},
		{"of another generation", func(p string) error { return os.WriteFile(p, jobindex.Encode(7, 1, nil), 0o600) }},
		{"damaged", func(p string) error { return os.WriteFile(p, []byte("not an index at all"), 0o600) }},
		{"a symbolic link", func(p string) error {
			os.Remove(p)
			return os.Symlink("/etc/passwd", p)
		}},
		{"a directory", func(p string) error {
			os.Remove(p)
			return os.Mkdir(p, 0o700)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			done := finishedIn(t, s, "j", 3)
			other := finishedIn(t, s, "k", 1)
			path := s.path(jobsDir, "j", jobindex.Name)
			if err := tc.spoil(path); err != nil {
				t.Fatal(err)
			}
			checkGets(t, s, tc.name, append(done, other...))
			if _, err := s.Get("0000000000000-absent"); !errors.Is(err, ledger.ErrNotFound) {
				t.Errorf("%s: Get(absent) = %v; want ErrNotFound", tc.name, err)
			}
			// The next finish in j.
			last := finishedIn(t, s, "j", 1)[0]
			done = append(done, last)
			checkGets(t, s, tc.name+", then a finish", done)
			wantTrusted := tc.name != "a directory" // which no rename replaces
			for _, r := range done {
				in, trusted := indexState(t, s, "j", r.ID)
				if trusted != wantTrusted || in != wantTrusted {
					t.Errorf("%s, then a finish: %s in the index = %v, trusted %v; want %v", tc.name, r.ID, in, trusted, wantTrusted)
				}
			}
			if _, err := os.Lstat(s.path(activeDir, last.ID)); (err == nil) == wantTrusted {
				t.Errorf("%s, then a finish: its link in active/: %v; want one only while the index cannot take it", tc.name, err)
			}
		})
	}

	t.Run("stale entry", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		done := finishedIn(t, s, "j", 2)
		f, ok := readIds(s.jobDirForTest(t, "j"))
		if !ok {
			t.Fatal("no index")
		}
		// An entry with done[1]'s hash that points at done[0]'s frame:
		// sorted before done[1]'s own, and, in the tail, after it.
		ents := jobindex.Ents(f.Entries)
		bad := jobindex.Ent{Hash: jobindex.Hash(done[1].ID), Off: ents[0].Off}
		for _, b := range [][]byte{jobindex.Encode(f.Gen, f.Ino, append(slices.Clone(ents), bad)), jobindex.Put(idsOf(&jobLog{Log: &joblog.Log{Gen: f.Gen, Ino: f.Ino}}, ents), bad)} {
			if err := os.WriteFile(s.path(jobsDir, "j", jobindex.Name), b, 0o600); err != nil {
				t.Fatal(err)
			}
			checkGets(t, s, "a stale entry", done)
		}
	})
}

// reopen opens the store at dir, closed when t ends.
func reopen(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestSearchIds reads an index whose sorted entries and tail hold an id
// each, some more than once, and one whose tail is longer than a read
// window: every entry is found, those at a window's edges too, and a
// torn last entry is left out.
func TestSearchIds(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	mustClaim(t, s, "j", ledger.ClaimOptions{})
	jd := s.jobDirForTest(t, "j")
	hashOf := func(i int) uint64 { return uint64(i) * 7919 }
	for _, tc := range []struct {
		name         string
		sorted, tail int
	}{
		{"sorted only", 5000, 0},
		{"tail only", 0, 3 * jobindex.TailMax},
		{"both", 3001, jobindex.TailMax - 1},
		{"one of each", 1, 1},
		{"empty", 0, 0},
	} {
		n := tc.sorted + tc.tail
		var ents []jobindex.Ent
		for i := 0; i < tc.sorted; i++ {
			ents = append(ents, jobindex.Ent{Hash: hashOf(i), Off: int64(i)})
		}
		// Entry 0 twice, and entry 1 more in the tail.
		ents = append(ents, jobindex.Ent{Hash: hashOf(0), Off: 1 << 40})
		b := jobindex.Encode(3, 42, ents)
		for i := tc.sorted; i < n; i++ {
			b = jobindex.Put(b, jobindex.Ent{Hash: hashOf(i), Off: int64(i)})
		}
		b = jobindex.Put(b, jobindex.Ent{Hash: hashOf(1), Off: 1 << 41})
		b = append(b, 1, 2, 3) // torn
		if err := os.WriteFile(s.path(jobsDir, "j", jobindex.Name), b, 0o600); err != nil {
			t.Fatal(err)
		}
		want := func(i int) []int64 {
			switch i {
			case 0:
				if n == 0 {
					return []int64{1 << 40}
				}
				return []int64{0, 1 << 40}
			case 1:
				if n <= 1 {
					return []int64{1 << 41}
				}
				return []int64{1, 1 << 41}
			}
			return []int64{int64(i)}
		}
		window := jobindex.TailMax
		for _, i := range []int{0, 1, 2, window - 1, window, window + 1, tc.sorted - 1, tc.sorted, tc.sorted + 1, n / 2, n - 2, n - 1} {
			if i < 0 || (i >= n && i > 1) {
				continue
			}
			f, offs, ok := searchIds(jd, hashOf(i))
			slices.Sort(offs)
			if !ok || f.Gen != 3 || f.Ino != 42 || !slices.Equal(offs, want(i)) {
				t.Errorf("%s: searchIds(joblog.Entry %d) = %+v, %v, %v; want offsets %v of generation 3, inode 42", tc.name, i, f, offs, ok, want(i))
			}
		}
		if _, offs, ok := searchIds(jd, hashOf(n+7)); !ok || len(offs) != 0 {
			t.Errorf("%s: searchIds(absent) = %v, %v; want none", tc.name, offs, ok)
		}
		f, ok := readIds(jd)
		if !ok || len(f.Entries) != (n+2)*jobindex.EntrySize || f.Sorted != int64(tc.sorted+1) {
			t.Errorf("%s: readIds = %d bytes of entries, %d sorted, %v; want %d, %d", tc.name, len(f.Entries), f.Sorted, ok, (n+2)*jobindex.EntrySize, tc.sorted+1)
		}
	}
	// A header that says more entries are sorted than the file holds.
	b := jobindex.Encode(3, 42, []jobindex.Ent{{Hash: 1, Off: 1}, {Hash: 2, Off: 2}})
	if err := os.WriteFile(s.path(jobsDir, "j", jobindex.Name), b[:len(b)-1], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := searchIds(jd, 1); ok {
		t.Errorf("searchIds(an index cut inside its sorted entries) is trusted; want not")
	}
}

// idsInode is the inode of job's index in s.
func idsInode(t *testing.T, s *Store, job string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(s.path(jobsDir, job, jobindex.Name), &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// TestIndexMerge: a finish appends its entry to the index's tail while
// the tail has room, and otherwise writes the index anew with every entry
// sorted; every execution stays readable through it.
func TestIndexMerge(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	done := finishedIn(t, s, "j", 3)
	jd := s.jobDirForTest(t, "j")
	f, ok := readIds(jd)
	if !ok || f.Sorted != 0 || len(f.Entries) != 3*jobindex.EntrySize {
		t.Fatalf("after 3 finishes in a new job: readIds = %d sorted of %d bytes, %v; want a tail of 3", f.Sorted, len(f.Entries), ok)
	}
	// One sorted entry, then a full tail: two real entries and stale
	// ones (of other hashes, at done[0]'s frame).
	ents := jobindex.Ents(f.Entries)
	b := jobindex.Encode(f.Gen, f.Ino, ents[:1])
	for _, e := range ents[1:] {
		b = jobindex.Put(b, e)
	}
	for i := len(ents) - 1; i < jobindex.TailMax; i++ {
		b = jobindex.Put(b, jobindex.Ent{Hash: uint64(i), Off: ents[0].Off})
	}
	if err := os.WriteFile(s.path(jobsDir, "j", jobindex.Name), b, 0o600); err != nil {
		t.Fatal(err)
	}
	before := idsInode(t, s, "j")

	done = append(done, finishedIn(t, s, "j", 1)...)
	f, ok = readIds(jd)
	if n := int64(len(f.Entries) / jobindex.EntrySize); !ok || n != int64(1+jobindex.TailMax+1) || f.Sorted != n {
		t.Errorf("a finish onto a full tail: readIds = %d sorted of %d entries, %v; want all %d sorted", f.Sorted, n, ok, 1+jobindex.TailMax+1)
	}
	if !slices.IsSortedFunc(jobindex.Ents(f.Entries), jobindex.Cmp) {
		t.Errorf("a finish onto a full tail: the index is not sorted")
	}
	if idsInode(t, s, "j") == before {
		t.Errorf("a finish onto a full tail wrote the index in place; want a new file renamed over it")
	}
	checkGets(t, s, "after the merge", done)

	done = append(done, finishedIn(t, s, "j", 1)...)
	f, ok = readIds(jd)
	if n := int64(len(f.Entries) / jobindex.EntrySize); !ok || f.Sorted != n-1 {
		t.Errorf("a finish after the merge: readIds = %d sorted of %d entries, %v; want a tail of 1", f.Sorted, n, ok)
	}
	checkGets(t, s, "after a finish onto the merged index", done)
	for _, r := range done {
		if in, trusted := indexState(t, s, "j", r.ID); !in || !trusted {
			t.Errorf("%s in the index = %v, trusted %v; want it there", r.ID, in, trusted)
		}
	}
}

// TestIndexNewBoot: the first writer of a boot leaves an index that holds
// what its log says, tail and all, as it is; it writes anew, sorted, one
// whose sorted entries are not, and one of the version before (its
// format "TIDS\0\0\0\1": a header of 24 bytes, entries in log order),
// which no reader trusts before.
func TestIndexNewBoot(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	recs := finishedIn(t, s, "j", 3)
	k := finishedIn(t, s, "k", 2)
	m := finishedIn(t, s, "m", 3)
	dir := s.path()
	whole := idsInode(t, s, "j")

	// m's index says its 3 entries are sorted, and they are not: a
	// binary search could miss one.
	fm, ok := readIds(s.jobDirForTest(t, "m"))
	if !ok {
		t.Fatal("no index of m")
	}
	unsorted := jobindex.Ents(fm.Entries)
	slices.SortFunc(unsorted, func(a, b jobindex.Ent) int { return jobindex.Cmp(b, a) })
	bm := jobindex.Encode(fm.Gen, fm.Ino, nil)
	binary.LittleEndian.PutUint64(bm[24:], uint64(len(unsorted)))
	for _, e := range unsorted {
		bm = jobindex.Put(bm, e)
	}
	if err := os.WriteFile(s.path(jobsDir, "m", jobindex.Name), bm, 0o600); err != nil {
		t.Fatal(err)
	}

	// k's index as the version before wrote it, and its note.
	jd := s.jobDirForTest(t, "k")
	f, ok := readIds(jd)
	if !ok {
		t.Fatal("no index of k")
	}
	v1 := append([]byte("TIDS\x00\x00\x00\x01"), make([]byte, 16)...)
	copy(v1[8:], jobindex.Encode(f.Gen, f.Ino, nil)[8:24])
	v1 = append(v1, f.Entries...)
	if err := os.WriteFile(s.path(jobsDir, "k", jobindex.Name), v1, 0o600); err != nil {
		t.Fatal(err)
	}
	boot := ledger.BootID()
	if boot == "" {
		boot = "none"
	}
	if err := os.WriteFile(s.path(linkedName), []byte(boot+"\nids 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s = reopen(t, dir)
	checkGets(t, s, "before a writer", append(append(recs, k...), m...))
	unlock, err := s.lock()
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	if b, err := os.ReadFile(s.path(linkedName)); err != nil || string(b) != linkedNote() {
		t.Errorf("after a writer, the note = %q, %v; want %q", b, err, linkedNote())
	}
	if idsInode(t, s, "j") != whole {
		t.Errorf("the first writer of a boot wrote anew an index that held every entry")
	}
	f, ok = readIds(s.jobDirForTest(t, "k"))
	if !ok || f.Sorted != 2 || len(f.Entries) != 2*jobindex.EntrySize {
		t.Errorf("after a writer, k's index = %d sorted of %d bytes, %v; want 2 entries, sorted", f.Sorted, len(f.Entries), ok)
	}
	f, ok = readIds(s.jobDirForTest(t, "m"))
	if !ok || f.Sorted != 3 || !slices.IsSortedFunc(jobindex.Ents(f.Entries), jobindex.Cmp) {
		t.Errorf("after a writer, m's index = %d sorted of %d bytes, %v; want 3 entries, sorted", f.Sorted, len(f.Entries), ok)
	}
	checkGets(t, s, "after a writer", append(append(recs, k...), m...))
}

// TestIndexKeptPastDamage: the first writer of a boot, whose walk of a
// log stops at a damaged frame, keeps the entries past it that the index
// held: an execution finished after the damage stays readable. (An index
// of the format before, never released, is not read: it is written anew.)
func TestIndexKeptPastDamage(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	before := finishedIn(t, s, "j", 1)
	bad := mustClaim(t, s, "j", ledger.ClaimOptions{})
	after := finishedIn(t, s, "j", 1)
	p := s.path(jobsDir, "j", joblog.Name)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[bytes.Index(b, []byte(`"id":"`+bad.ID+`"`))+2] ^= 1
	if err := os.WriteFile(p, b, 0o600); err != nil { // in place: the index still names it
		t.Fatal(err)
	}
	note := "another boot\nids 2\n"
	if err := os.WriteFile(s.path(linkedName), []byte(note), 0o600); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s.path())
	unlock, err := s.lock()
	if err != nil {
		t.Fatalf("the first writer of a boot, with a damaged log: %v", err)
	}
	unlock()
	checkGets(t, s, "after a writer", append(before, after...))
	if in, trusted := indexState(t, s, "j", after[0].ID); !in || !trusted {
		t.Errorf("after a writer, %s past the damage in the index = %v, trusted %v; want it there", after[0].ID, in, trusted)
	}
}

// TestEnded: a job's count of terminal executions read from its index
// alone is its summary's while nothing was pruned, what prune kept after,
// and unknown (not zero) without an index of this format or for a name
// that is no job's.
func TestEnded(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	if n, ok := s.Ended("j"); ok {
		t.Errorf("Ended(j) of no such job = %d, true; want false", n)
	}
	mustClaim(t, s, "j", ledger.ClaimOptions{}) // live: not counted
	finishedIn(t, s, "j", 3)
	sums, err := s.Summaries("j")
	if err != nil || len(sums) != 1 {
		t.Fatalf("Summaries(j) = %v, %v", sums, err)
	}
	var runs uint64
	for _, n := range sums[0].Runs {
		runs += n
	}
	if n, ok := s.Ended("j"); !ok || n != 3 || n != runs {
		t.Errorf("Ended(j) after 3 finishes = %d, %v; want 3, true (the summary counts %d)", n, ok, runs)
	}
	if _, err := s.Prune(ledger.PruneOptions{Job: "j", Keep: 1}, nil); err != nil {
		t.Fatal(err)
	}
	if n, ok := s.Ended("j"); !ok || n != 1 {
		t.Errorf("Ended(j) after prune --keep 1 = %d, %v; want 1, true", n, ok)
	}
	// A name that is no job's, though it would lead to j's directory.
	if n, ok := s.Ended("../" + jobsDir + "/j"); ok {
		t.Errorf("Ended(../%s/j) = %d, true; want false", jobsDir, n)
	}
	if err := os.WriteFile(s.path(jobsDir, "j", jobindex.Name), []byte("TIDS\x00\x00\x00\x01 an index of the format before"), 0o600); err != nil {
		t.Fatal(err)
	}
	if n, ok := s.Ended("j"); ok {
		t.Errorf("Ended(j) with an index of another format = %d, true; want false", n)
	}
}

// TestClaimChosenID: a claim with an id from NewID (ledger run's) takes
// it; one that is live, whatever its job, or finished in the job claimed,
// is refused as bad input, a malformed one as a bad id, with nothing
// written.
func TestClaimChosenID(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	live := mustClaim(t, s, "other", ledger.ClaimOptions{})
	done := finishedIn(t, s, "j", 1)[0]
	for _, c := range []struct {
		name, job, id string
		want          error
	}{
		{"fresh", "j", ledger.NewID(time.Now(), "j"), nil},
		{"live in another job", "j", live.ID, ledger.ErrBadInput},
		{"live in the job", "other", live.ID, ledger.ErrBadInput},
		{"finished in the job", "j", done.ID, ledger.ErrBadInput},
		{"malformed", "j", "Bad/ID", ledger.ErrBadID},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := s.Claim(c.job, ledger.ClaimOptions{ID: c.id, Owner: ledgertest.Self(t)})
			switch {
			case c.want == nil && (err != nil || r.ID != c.id):
				t.Errorf("Claim(%s, ID %s) = %s, %v; want that id", c.job, c.id, r.ID, err)
			case c.want != nil && !errors.Is(err, c.want):
				t.Errorf("Claim(%s, ID %s) = %s, %v; want %v", c.job, c.id, r.ID, err, c.want)
			}
		})
	}
	if got, err := s.Get(done.ID); err != nil || got.Status != done.Status || got.Job != "j" {
		t.Errorf("Get(%s) after the refused claims = %s %s, %v; want it %s in j", done.ID, got.Job, got.Status, err, done.Status)
	}
	if got, err := s.Get(live.ID); err != nil || got.Status != live.Status || got.Job != "other" {
		t.Errorf("Get(%s) after the refused claims = %s %s, %v; want it %s in other", live.ID, got.Job, got.Status, err, live.Status)
	}
}

// TestDamagedFinishHoldsInstant: damage inside a finished execution's
// terminal version, with sound frames after it, is ErrCorrupt as the
// index leads to it, as the walk of the log without one says: never "not
// found", which freed the --instant slot it holds for a second run (an
// adversarial sweep: one flipped byte, and the payload ran again).
func TestDamagedFinishHoldsInstant(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	at := time.Unix(100, 0)
	done := mustClaim(t, s, "j", ledger.ClaimOptions{Instant: at})
	if _, err := s.Start(done.ID, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Finish(done.ID, ledger.Completed, new(int), ""); err != nil {
		t.Fatal(err)
	}
	finishedIn(t, s, "j", 1) // sound frames after the damage
	p := s.path(jobsDir, "j", joblog.Name)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[bytes.Index(b, []byte(`"completed"`))+2] ^= 1
	if err := os.WriteFile(p, b, 0o600); err != nil { // in place: the index still names it
		t.Fatal(err)
	}
	if _, err := s.Get(done.ID); !errors.Is(err, ledger.ErrCorrupt) {
		t.Errorf("Get(%s) of a damaged finish = %v; want ErrCorrupt", done.ID, err)
	}
	if r, err := s.Claim("j", ledger.ClaimOptions{Owner: ledgertest.Self(t), Instant: at}); !errors.Is(err, ledger.ErrCorrupt) {
		t.Errorf("Claim of the instant a damaged finish holds = %v, %v; want ErrCorrupt", r.ID, err)
	}
}

// TestDamagedActiveLink: a live execution's link in active/ that names no
// job (tampering, a damaged disk) is ErrCorrupt to the writers that scan
// active/, as to Get: an --exclusive claim is refused, never a second
// live execution beside the first, and Recover says so.
func TestDamagedActiveLink(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	live := mustClaim(t, s, "j", ledger.ClaimOptions{Owner: ledger.Owner{PID: 1}, Exclusive: true}) // an owner not judged on this host: live
	link := s.path(activeDir, live.ID)
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", link); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(live.ID); !errors.Is(err, ledger.ErrCorrupt) {
		t.Errorf("Get(%s) = %v; want ErrCorrupt", live.ID, err)
	}
	if r, err := s.Claim("j", ledger.ClaimOptions{Owner: ledgertest.Self(t), Exclusive: true}); !errors.Is(err, ledger.ErrCorrupt) {
		t.Errorf("Claim(j, exclusive) beside a damaged link = %v, %v; want ErrCorrupt", r.ID, err)
	}
	if _, err := s.Recover(0); !errors.Is(err, ledger.ErrCorrupt) {
		t.Errorf("Recover beside a damaged link = %v; want ErrCorrupt", err)
	}
}
