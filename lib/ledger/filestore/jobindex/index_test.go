package jobindex

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMerge: an index written anew from a sorted head and a tail in log
// order is sorted whole, holds every entry, and parses back as such.
func TestMerge(t *testing.T) {
	t.Parallel()
	head := Encode(7, 42, []Ent{{Hash: 5, Off: 50}, {Hash: 1, Off: 10}, {Hash: 9, Off: 90}})
	for _, e := range []Ent{{Hash: 3, Off: 130}, {Hash: 1, Off: 140}} {
		head = Put(head, e)
	}
	f, ok := Parse(head)
	if !ok || f.Sorted != 3 || !f.Of(7, 42) || len(f.Entries) != 5*EntrySize {
		t.Fatalf("Parse(3 sorted + 2 tail) = %+v, %v; want 3 sorted of 5, generation 7, inode 42", f, ok)
	}
	merged := Merge(Ents(f.Entries), f.Sorted, Ent{Hash: 5, Off: 150})
	want := []Ent{{Hash: 1, Off: 10}, {Hash: 1, Off: 140}, {Hash: 3, Off: 130}, {Hash: 5, Off: 50}, {Hash: 5, Off: 150}, {Hash: 9, Off: 90}}
	if !slices.Equal(merged, want) {
		t.Errorf("Merge = %v; want %v", merged, want)
	}
	g, ok := Parse(Encode(7, 42, merged))
	if !ok || g.Sorted != int64(len(want)) || !g.Holds(want) {
		t.Errorf("Parse(Encode(merged)) = %+v, %v; want all %d sorted", g, ok, len(want))
	}
	if got := Offsets(g.Entries, 5); !slices.Equal(got, []int64{50, 150}) {
		t.Errorf("Offsets(hash 5) = %v; want [50 150]", got)
	}
	if _, ok := Parse(head[:Head-1]); ok {
		t.Errorf("Parse(a cut header) is an index; want not")
	}
}

// TestScanTailPastExpected: ScanTail sizes its window by what the caller's
// fstat saw of the tail, and still finds the entries a writer appended
// since, however many.
func TestScanTailPastExpected(t *testing.T) {
	var b []byte
	var want []int64
	for i := range 300 {
		h := uint64(i % 7)
		b = Put(b, Ent{Hash: h, Off: int64(i)})
		if h == 3 {
			want = append(want, int64(i))
		}
	}
	b = append(b, 9, 9) // torn: a writer midway
	path := filepath.Join(t.TempDir(), "ids")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(path, unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	for _, expect := range []int64{-1, 0, EntrySize, 40 * EntrySize, int64(len(b)), 1 << 20} {
		offs, ok := ScanTail(fd, 0, expect, 3)
		if !ok || !slices.Equal(offs, want) {
			t.Errorf("ScanTail(expect %d) = %v, %v; want %v", expect, offs, ok, want)
		}
	}
}
