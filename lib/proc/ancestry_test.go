package proc

import (
	"errors"
	"fmt"
	"testing"
)

// fakeProc is a /proc for descends: each entry is PID → stat.
type fakeProc map[int]Stat

func (f fakeProc) read(pid int) (Stat, error) {
	if st, ok := f[pid]; ok {
		return st, nil
	}
	return Stat{}, fmt.Errorf("pid %d: %w", pid, ErrGone)
}

func ps(pid, ppid int, start uint64) Stat {
	return Stat{PID: pid, PPID: ppid, Start: start, State: Sleeping, Threads: 1}
}

func TestDescends(t *testing.T) {
	// init(1) ─ harness(50) ─ root(100) ┬ worker(110) ─ child(120) ─ grandchild(130)
	//                                   └ zombie(140)
	// init(1) ─ sibling(200), orphan(300): a double-forked daemon re-parented to init
	tree := fakeProc{
		1:   ps(1, 0, 1),
		50:  ps(50, 1, 500),
		100: ps(100, 50, 1000),
		110: ps(110, 100, 1100),
		120: ps(120, 110, 1200),
		130: ps(130, 120, 1300),
		140: {PID: 140, PPID: 100, Start: 1400, State: Zombie, Threads: 1},
		200: ps(200, 1, 2000),
		300: ps(300, 1, 3000),
	}
	root := ID{PID: 100, Start: 1000}
	tests := []struct {
		name string
		proc fakeProc
		id   ID
		root ID
		want bool
		err  error
	}{
		{"root itself", tree, ID{100, 1000}, root, true, nil},
		{"child", tree, ID{110, 1100}, root, true, nil},
		{"grandchild", tree, ID{120, 1200}, root, true, nil},
		{"great-grandchild", tree, ID{130, 1300}, root, true, nil},
		{"no START asked", tree, ID{PID: 130}, root, true, nil},
		{"root without START", tree, ID{130, 1300}, ID{PID: 100}, true, nil},
		{"sibling of the root's tree", tree, ID{200, 2000}, root, false, nil},
		{"orphan re-parented to init", tree, ID{300, 3000}, root, false, nil},
		{"ancestor of the root", tree, ID{50, 500}, root, false, nil},
		{"init", tree, ID{1, 1}, root, false, nil},
		{"root recycled: another START", tree, ID{130, 1300}, ID{100, 999}, false, nil},
		{"target recycled: another START", tree, ID{130, 42}, root, false, ErrGone},
		{"target missing", tree, ID{999, 1}, root, false, ErrGone},
		{"target a zombie", tree, ID{140, 1400}, root, false, ErrGone},
		{"parent PID recycled by a younger process", fakeProc{
			100: ps(100, 50, 1000), 50: ps(50, 1, 500), 1: ps(1, 0, 1),
			120: ps(120, 110, 1200), 110: ps(110, 100, 5000), // started after its "child"
		}, ID{120, 1200}, root, false, nil},
		{"parent gone mid-walk", fakeProc{
			100: ps(100, 50, 1000), 50: ps(50, 1, 500), 1: ps(1, 0, 1),
			120: ps(120, 110, 1200),
		}, ID{120, 1200}, root, false, nil},
		{"parent exited (zombie)", fakeProc{
			100: ps(100, 50, 1000), 50: ps(50, 1, 500), 1: ps(1, 0, 1),
			120: ps(120, 110, 1200), 110: {PID: 110, PPID: 100, Start: 1100, State: Zombie, Threads: 1},
		}, ID{120, 1200}, root, false, nil},
		{"loop of recycled PIDs", fakeProc{
			7: ps(7, 8, 10), 8: ps(8, 7, 10),
		}, ID{7, 10}, root, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := descends(tt.proc.read, tt.id, tt.root)
			if got != tt.want || !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
				t.Errorf("descends(%v, %v) = %v, %v; want %v, %v", tt.id, tt.root, got, err, tt.want, tt.err)
			}
		})
	}
}

// TestDescendsReparented: a process whose parent exits during the walk is
// judged by where it is now, after the walk starts over.
func TestDescendsReparented(t *testing.T) {
	root := ID{PID: 100, Start: 1000}
	for _, tt := range []struct {
		name     string
		newPPID  int // where the kernel re-parented it
		want     bool
		wantRead int
	}{
		{"to a subreaper inside the tree", 100, true, 4},
		{"to init", 1, false, 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := fakeProc{1: ps(1, 0, 1), 50: ps(50, 1, 500), 100: ps(100, 50, 1000),
				120: ps(120, 110, 1200)} // 110 has just exited
			reads := 0
			read := func(pid int) (Stat, error) {
				reads++
				st, err := f.read(pid)
				if pid == 110 {
					f[120] = ps(120, tt.newPPID, 1200) // the re-parenting lands
				}
				return st, err
			}
			got, err := descends(read, ID{120, 1200}, root)
			if got != tt.want || err != nil || reads != tt.wantRead {
				t.Errorf("descends(re-parented %s) = %v, %v after %d reads; want %v, nil after %d", tt.name, got, err, reads, tt.want, tt.wantRead)
			}
		})
	}
}
