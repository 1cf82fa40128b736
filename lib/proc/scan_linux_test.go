package proc

import (
	"errors"
	"os"
	"slices"
	"testing"
)

// TestParseStatWalkFields: the fields the tree walk uses (PPID, PGID, SID,
// threads, start) come out of ParseStat right, a comm with parentheses
// and spaces included.
func TestParseStatWalkFields(t *testing.T) {
	tests := []struct {
		line string
		want Stat
		ok   bool
	}{
		{"42 (sleep) S 1 42 42 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 12345 0 0\n",
			Stat{PID: 42, Comm: "sleep", State: Sleeping, PPID: 1, PGID: 42, SID: 42, Threads: 1, Start: 12345}, true},
		{"7 (a) (b ) c) Z 3 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0",
			Stat{PID: 7, Comm: "a) (b ) c", State: Zombie, PPID: 3, PGID: 7, SID: 7, Threads: 1, Start: 99}, true},
		{"7 (x) T 3 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 5 0", Stat{}, false},
		{"garbage", Stat{}, false},
	}
	for _, tt := range tests {
		got, err := ParseStat([]byte(tt.line))
		if (err == nil) != tt.ok || (tt.ok && got != tt.want) {
			t.Errorf("ParseStat(%q) = %+v, %v; want %+v ok=%v", tt.line, got, err, tt.want, tt.ok)
		}
	}
}

// TestSnapshotAgreesWithReadStat checks the scanner against ReadStat.
func TestSnapshotAgreesWithReadStat(t *testing.T) {
	r, err := NewScanner()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	snap, err := r.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	self := os.Getpid()
	want, err := ReadStat(self)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := snap.Stat(self)
	if !ok || got.PPID != want.PPID || got.Start != want.Start || got.Threads < 1 || got.Comm != want.Comm || got.PGID != want.PGID {
		t.Errorf("Snapshot().Stat(self) = %+v, %v; want ppid %d start %d comm %q pgid %d", got, ok, want.PPID, want.Start, want.Comm, want.PGID)
	}
	if kids := snap.Children(want.PPID); !slices.Contains(kids, self) {
		t.Errorf("Snapshot().Children(%d) = %v; want it to hold %d", want.PPID, kids, self)
	}
}

func TestScannerStatGone(t *testing.T) {
	r, err := NewScanner()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if st, err := r.Stat(MaxPID); !errors.Is(err, ErrGone) {
		t.Errorf("Scanner.Stat(%d) = %+v, %v; want ErrGone", MaxPID, st, err)
	}
	if st, err := ReadStat(MaxPID); !errors.Is(err, ErrGone) {
		t.Errorf("ReadStat(%d) = %+v, %v; want ErrGone", MaxPID, st, err)
	}
}

func BenchmarkSnapshot(b *testing.B) {
	r, err := NewScanner()
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	for i := 0; i < b.N; i++ {
		if _, err := r.Snapshot(); err != nil {
			b.Fatal(err)
		}
	}
}
