//go:build linux

package filestore

import (
	"encoding/binary"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/tether-sh/tether/lib/ledger"
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
		{"of another generation", func(p string) error { return os.WriteFile(p, idsHeaderOf(7, 1), 0o600) }},
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
			path := s.path(jobsDir, "j", idsName)
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
		path := s.path(jobsDir, "j", idsName)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// An entry with done[1]'s hash that points at done[0]'s frame,
		// before done[1]'s own.
		bad := binary.LittleEndian.AppendUint64(nil, idHash(done[1].ID))
		bad = append(bad, b[idsHead+8:idsHead+16]...)
		b = slices.Insert(b, idsHead, bad...)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		checkGets(t, s, "a stale entry", done)
	})
}

// TestIndexFromLinks opens a store as the version before indexes left it:
// each finished execution linked in exec/, no index, the note of that
// version. Readers find every execution; the first writer indexes them,
// empties exec/ and notes it.
func TestIndexFromLinks(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	recs := append(finishedIn(t, s, "j", 3), finishedIn(t, s, "k", 2)...)
	live := mustClaim(t, s, "j", ledger.ClaimOptions{})
	if _, err := ledger.Pruned(s, ledger.PruneOptions{Job: "k", Keep: 1}); err != nil {
		t.Fatal(err)
	}
	recs = slices.Delete(recs, 3, 4) // k's first, pruned
	dir := s.path()
	s.Close()

	// The version before: links in exec/, no index.
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		jd, l, _, err := s.openJob(r.Job)
		if err != nil {
			t.Fatal(err)
		}
		f, _ := readIds(jd)
		offs := idsFor(f.entries, idHash(r.ID))
		if len(offs) != 1 {
			t.Fatalf("%s: %d index entries; want 1", r.ID, len(offs))
		}
		if err := os.Symlink(hintOf(l.gen, offs[0], r.Job), s.path(execDir, r.ID)); err != nil {
			t.Fatal(err)
		}
		l.close()
		closeDir(jd)
	}
	for _, job := range []string{"j", "k"} {
		if err := os.Remove(s.path(jobsDir, job, idsName)); err != nil {
			t.Fatal(err)
		}
	}
	bootOnly := ledger.BootID() + "\n"
	if ledger.BootID() == "" {
		bootOnly = "none\n"
	}
	if err := os.WriteFile(s.path(linkedName), []byte(bootOnly), 0o600); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = OpenExisting(dir)
	if err != nil {
		t.Fatal(err)
	}
	checkGets(t, s, "before a writer", append(recs, live))
	if ids := namesOf(t, dir); len(ids) != len(recs)+1 {
		t.Errorf("before a writer, Names = %v; want %d ids", ids, len(recs)+1)
	}
	s.Close()

	// A writer.
	s = reopen(t, dir)
	unlock, err := s.lock()
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	if names, _ := readNames(s.exec); len(names) != 0 {
		t.Errorf("after a writer, exec/ = %v; want nothing", names)
	}
	for _, r := range recs {
		if in, trusted := indexState(t, s, r.Job, r.ID); !in || !trusted {
			t.Errorf("after a writer, %s in the index = %v, trusted %v; want it there", r.ID, in, trusted)
		}
	}
	if b, err := os.ReadFile(s.path(linkedName)); err != nil || string(b) != linkedNote() {
		t.Errorf("after a writer, the note = %q, %v; want %q", b, err, linkedNote())
	}
	checkGets(t, s, "after a writer", append(recs, live))
	if ids := namesOf(t, dir); len(ids) != len(recs)+1 {
		t.Errorf("after a writer, Names = %v; want %d ids", ids, len(recs)+1)
	}
}

// namesOf is Names(dir)'s ids.
func namesOf(t *testing.T, dir string) []string {
	t.Helper()
	_, ids := Names(dir, false)
	return ids
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

// TestSearchIds reads an index larger than its window: every entry is
// found, the one that straddles two windows too, and a torn last entry is
// left out.
func TestSearchIds(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	mustClaim(t, s, "j", ledger.ClaimOptions{})
	jd := s.jobDirForTest(t, "j")
	const n = 3 * logReadSize / idsEntry
	b := idsHeaderOf(3, 42)
	for i := 0; i < n; i++ {
		b = binary.LittleEndian.AppendUint64(b, uint64(i)*7919)
		b = binary.LittleEndian.AppendUint64(b, uint64(i))
	}
	b = append(b, 1, 2, 3) // torn
	if err := os.WriteFile(s.path(jobsDir, "j", idsName), b, 0o600); err != nil {
		t.Fatal(err)
	}
	straddles := (logReadSize - idsHead) / idsEntry
	for _, i := range []int{0, 1, straddles - 1, straddles, straddles + 1, n / 2, n - 1} {
		f, offs, ok := searchIds(jd, uint64(i)*7919)
		if !ok || f.gen != 3 || f.ino != 42 || !slices.Equal(offs, []int64{int64(i)}) {
			t.Errorf("searchIds(entry %d) = %+v, %v, %v; want offset %d of generation 3, inode 42", i, f, offs, ok, i)
		}
	}
	if _, offs, ok := searchIds(jd, 7919*n); !ok || len(offs) != 0 {
		t.Errorf("searchIds(absent) = %v, %v; want none", offs, ok)
	}
	f, ok := readIds(jd)
	if !ok || len(f.entries) != n*idsEntry {
		t.Errorf("readIds = %d bytes of entries, %v; want %d", len(f.entries), ok, n*idsEntry)
	}
}
