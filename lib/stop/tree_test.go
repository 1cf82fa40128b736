//go:build linux

package stop_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/internal/testutil"
	"github.com/tether-sh/tether/lib/proc"
	"github.com/tether-sh/tether/lib/scripttest"
	"github.com/tether-sh/tether/lib/stop"
)

// tgleader makes the test binary scripttest's tgleader program: a
// thread-group leader that exits while its other thread runs on.
const tgleader = testutil.Role("STOP_TEST_TGLEADER")

// TestMain runs the tests with no signal ignored but those they ignore
// themselves (testutil.DefaultSignals).
func TestMain(m *testing.M) {
	tgleader.Serve(func(string, []string) int {
		scripttest.Programs()["tgleader"]()
		return 2 // not reached: the program exits
	})
	testutil.Main(m)
}

// Orphans of the trees below must come back to this process: PID 1 on some
// machines never reaps, and an escaped descendant must be detectable.
var subreaperOnce sync.Once

func becomeSubreaper(t *testing.T) {
	t.Helper()
	subreaperOnce.Do(func() {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			t.Fatalf("PR_SET_CHILD_SUBREAPER: %v", err)
		}
	})
}

// startTree runs script with sh in a temporary directory and waits until
// every file in ready exists. It returns the shell's identity and the dir.
func startTree(t *testing.T, script string, ready ...string) (*exec.Cmd, proc.ID, string) {
	t.Helper()
	becomeSubreaper(t)
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	id, err := proc.Lookup(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ready {
		testutil.WaitContent(t, filepath.Join(dir, f), 30*time.Second)
	}
	return cmd, id, dir
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return pid
}

// reapTree collects the shell and every zombie the tree left with us.
func reapTree(cmd *exec.Cmd, ids []proc.ID) {
	for _, id := range ids {
		if id.PID != cmd.Process.Pid {
			var ws unix.WaitStatus
			unix.Wait4(id.PID, &ws, unix.WNOHANG|unix.WALL, nil)
		}
	}
	cmd.Wait()
}

// liveChildren lists live processes whose parent is this process, except
// the ones in skip: a descendant that escaped a tree lands here.
func liveChildren(t *testing.T, skip int) []int {
	t.Helper()
	var out []int
	err := proc.Scan(func(st proc.Stat) {
		if st.PPID == os.Getpid() && st.PID != skip && !st.Exited() {
			out = append(out, st.PID)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestNewTreeRefuses(t *testing.T) {
	tests := []struct {
		name string
		id   proc.ID
	}{
		{"init", proc.ID{PID: 1}},
		{"self", proc.ID{PID: os.Getpid()}},
		{"parent", proc.ID{PID: os.Getppid()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := stop.NewTree(tt.id, "")
			if !errors.Is(err, proc.ErrUnsafe) {
				t.Errorf("NewTree(%v) = %v, %v; want an error wrapping ErrUnsafe", tt.id, tr, err)
			}
		})
	}
}

func TestNewTreeGoneRoot(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		id   proc.ID
	}{
		{"reaped", proc.ID{PID: cmd.Process.Pid, Start: 1}},
		{"other start", proc.ID{PID: os.Getpid(), Start: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := stop.NewTree(tt.id, "")
			if tt.id.PID == os.Getpid() {
				// The caller itself is refused even with a wrong START.
				if !errors.Is(err, proc.ErrUnsafe) {
					t.Errorf("NewTree(%v) = %v; want ErrUnsafe", tt.id, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewTree(%v) = %v; want a gone tree", tt.id, err)
			}
			defer tr.Close()
			if !tr.Gone() {
				t.Errorf("NewTree(%v).Gone() = false; want true", tt.id)
			}
			out := stop.Run(context.Background(), []stop.Target{tr}, stop.Default(unix.SIGTERM, time.Second))
			if !out[0].Gone || len(out[0].Sent) != 0 {
				t.Errorf("Run(gone tree) = gone %v sent %v; want gone, nothing sent", out[0].Gone, out[0].Sent)
			}
		})
	}
}

// TestTreeStops covers the shapes a tree takes; every descendant written
// to a pid file must be gone when Run returns, and none may have escaped.
func TestTreeStops(t *testing.T) {
	tests := []struct {
		name   string
		script string
		pids   []string // files holding descendants' PIDs
		killed bool     // the tree needs KILL
	}{
		{
			name:   "children and grandchildren",
			script: `sleep 100 & echo $! >a; sh -c 'sleep 100 & echo $! >b; wait' & wait`,
			pids:   []string{"a", "b"},
		},
		{
			name: "moved to another group and session",
			script: `setsid sleep 100 & echo $! >a
				bash -c 'set -m; sleep 100 & echo $! >b; wait' & wait`,
			pids: []string{"a", "b"},
		},
		{
			name:   "ignores TERM",
			script: `trap '' TERM; sleep 100 & echo $! >a; wait`,
			pids:   []string{"a"},
			killed: true,
		},
		{
			// The middle shell exits on TERM, re-parenting its TERM-ignoring
			// child away from the tree: it must still be killed.
			name:   "re-parented during the stop",
			script: `sh -c 'sh -c "trap \"\" TERM; echo \$\$ >a; exec sleep 100" & wait' & echo $! >b; wait`,
			pids:   []string{"a", "b"},
			killed: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd, id, dir := startTree(t, tt.script, tt.pids...)
			tr, err := stop.NewTree(id, "")
			if err != nil {
				t.Fatalf("NewTree(%v) = %v", id, err)
			}
			defer tr.Close()
			// A long grace shows that Run returns the moment the tree is
			// gone; a TERM-ignoring tree keeps the test short.
			grace := 5 * time.Second
			if tt.killed {
				grace = 300 * time.Millisecond
			}
			start := time.Now()
			out := stop.Run(context.Background(), []stop.Target{tr}, stop.Default(unix.SIGTERM, grace))
			elapsed := time.Since(start)
			defer reapTree(cmd, tr.Found())
			if !out[0].Gone {
				t.Fatalf("Run(tree) gone = false after %v; want true", elapsed)
			}
			if killed, _ := out[0].Killed(); killed != tt.killed {
				t.Errorf("Run(tree) killed = %v; want %v (sent %v)", killed, tt.killed, out[0].Sent)
			}
			if !tt.killed && elapsed >= grace {
				t.Errorf("Run(tree) took %v; want the moment it is gone, before the %v grace", elapsed, grace)
			}
			for _, f := range tt.pids {
				pid := readPID(t, filepath.Join(dir, f))
				if alive, _ := proc.Alive(proc.ID{PID: pid}); alive {
					t.Errorf("pid %d (%s) alive after Run; want gone", pid, f)
				}
			}
			if left := liveChildren(t, cmd.Process.Pid); len(left) > 0 {
				t.Errorf("live children after Run = %v; want none (escaped the tree)", left)
			}
		})
	}
}

// TestTreeForkLoop stops a tree that forks as fast as it can and ignores
// TERM: the freeze must leave no descendant behind.
func TestTreeForkLoop(t *testing.T) {
	script := `trap '' TERM
		sh -c 'while :; do sleep 100 & echo >forked; done' &
		until [ -s forked ]; do sleep 0.01; done
		echo go >ready; wait`
	cmd, id, _ := startTree(t, script, "ready")
	tr, err := stop.NewTree(id, "")
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	start := time.Now()
	out := stop.Run(context.Background(), []stop.Target{tr}, stop.Default(unix.SIGTERM, 100*time.Millisecond))
	found := tr.Found()
	t.Logf("Run took %v for %d processes (sent %v)", time.Since(start), len(found), out[0].Sent)
	defer reapTree(cmd, found)
	if !out[0].Gone {
		t.Fatalf("Run(fork loop) gone = false; want true")
	}
	if len(found) < 3 {
		t.Errorf("Run(fork loop) found %d processes; want at least 3", len(found))
	}
	if left := liveChildren(t, cmd.Process.Pid); len(left) > 0 {
		t.Errorf("live children after Run = %v; want none (escaped the tree)", left)
	}
}

// TestTreeListAndWithin: List shows the tree without signalling it, and
// Within stops a member but refuses a process outside the tree.
func TestTreeListAndWithin(t *testing.T) {
	cmd, root, dir := startTree(t, `sleep 100 & echo $! >a; sh -c 'sleep 100 & echo $! >b; wait' & wait`, "a", "b")
	outside := exec.Command("sleep", "100")
	if err := outside.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { outside.Process.Kill(); outside.Wait() }()
	a, b := readPID(t, filepath.Join(dir, "a")), readPID(t, filepath.Join(dir, "b"))

	tr, err := stop.NewTree(root, "")
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	stats, err := tr.List()
	if err != nil {
		t.Fatalf("List() = %v", err)
	}
	pids := map[int]string{}
	for _, st := range stats {
		pids[st.PID] = st.Comm
	}
	for _, want := range []int{root.PID, a, b} {
		if _, ok := pids[want]; !ok {
			t.Errorf("List() = %v; want it to hold pid %d", pids, want)
		}
	}
	if _, ok := pids[outside.Process.Pid]; ok {
		t.Errorf("List() = %v; want no pid %d (outside)", pids, outside.Process.Pid)
	}
	if pids[a] == "" {
		// sh or sleep: the PID file is written before sleep's exec.
		t.Errorf("List()[%d].Comm = %q; want its command name", a, pids[a])
	}
	if st, _ := proc.ReadStat(a); st.Stopped() {
		t.Errorf("after List(), pid %d state %c; want not stopped", a, st.State)
	}

	out, err := stop.NewWithin(root, proc.ID{PID: outside.Process.Pid}, "")
	if !errors.Is(err, proc.ErrOutside) {
		t.Errorf("NewWithin(%v, outside %d) = %v, %v; want ErrOutside", root, outside.Process.Pid, out, err)
	}
	if _, err := stop.NewWithin(proc.ID{PID: root.PID}, proc.ID{PID: a}, ""); !errors.Is(err, proc.ErrBadID) {
		t.Errorf("NewWithin(root without START) = %v; want ErrBadID", err)
	}
	w, err := stop.NewWithin(root, proc.ID{PID: b}, "")
	if err != nil {
		t.Fatalf("NewWithin(%v, grandchild %d) = %v", root, b, err)
	}
	defer w.Close()
	res := stop.Run(context.Background(), []stop.Target{w}, stop.Default(unix.SIGTERM, 5*time.Second))
	if !res[0].Gone || res[0].Err != nil {
		t.Errorf("Run(within %d) = gone %v, err %v; want gone", b, res[0].Gone, res[0].Err)
	}
	if alive, _ := proc.Alive(proc.ID{PID: a}); !alive {
		t.Errorf("pid %d alive = false after stopping only %d; want true", a, b)
	}
	tr2, err := stop.NewTree(root, "")
	if err != nil {
		t.Fatal(err)
	}
	defer tr2.Close()
	stop.Run(context.Background(), []stop.Target{tr2}, stop.Default(unix.SIGKILL, 0))
	reapTree(cmd, append(tr.Found(), tr2.Found()...))
}
