//go:build linux

package stop

import (
	"os"
	"testing"

	"github.com/tether-sh/tether/lib/proc"
)

func TestParsePstat(t *testing.T) {
	tests := []struct {
		line string
		want pstat
		ok   bool
	}{
		{"42 (sleep) S 1 42 42 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 12345 0 0\n",
			pstat{state: 'S', ppid: 1, threads: 1, start: 12345}, true},
		{"7 (a) (b ) c) Z 3 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0",
			pstat{state: 'Z', ppid: 3, threads: 1, start: 99}, true},
		{"7 (x) T 3 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 5 0", pstat{}, false},
		{"garbage", pstat{}, false},
	}
	for _, tt := range tests {
		got, err := parsePstat([]byte(tt.line))
		if (err == nil) != tt.ok || (tt.ok && got != tt.want) {
			t.Errorf("parsePstat(%q) = %+v, %v; want %+v ok=%v", tt.line, got, err, tt.want, tt.ok)
		}
	}
}

// TestSnapshotAgreesWithProc checks the fast reader against lib/proc.
func TestSnapshotAgreesWithProc(t *testing.T) {
	r, err := newStatReader()
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	snap, err := r.snapshot()
	if err != nil {
		t.Fatal(err)
	}
	self := os.Getpid()
	want, err := proc.ReadStat(self)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := snap.stats[self]
	if !ok || got.ppid != want.PPID || got.start != want.Start || got.threads < 1 {
		t.Errorf("snapshot()[self] = %+v, %v; want ppid %d start %d", got, ok, want.PPID, want.Start)
	}
	if kids := snap.kids[want.PPID]; !contains(kids, self) {
		t.Errorf("snapshot().kids[%d] = %v; want it to hold %d", want.PPID, kids, self)
	}
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
