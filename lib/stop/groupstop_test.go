//go:build linux

package stop_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/internal/testutil"
	"github.com/tether-sh/tether/lib/proc"
)

// TestGroupStoppedZombieLeader stops and continues a process whose
// thread-group leader has exited while its other thread runs: its state
// stays Z throughout, and GroupStopped follows the group by its threads
// (a tree freeze waits on it; judged by the leader, it waited out its
// whole limit at every freeze).
func TestGroupStoppedZombieLeader(t *testing.T) {
	dir := t.TempDir()
	pidfile, release := filepath.Join(dir, "pid"), filepath.Join(dir, "release")
	c := tgleader.Command("tgleader", "-pidfile", pidfile, "-release", release)
	c.Args[0] = "tgleader" // scripttest locks its main goroutine to the leader's thread for this name
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		c.Process.Signal(unix.SIGKILL)
		c.Wait()
	}()
	id, err := proc.ParseID(strings.TrimSpace(testutil.WaitContent(t, pidfile, 30*time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	r, err := proc.NewScanner()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// until waits for GroupStopped to say want, reading the state afresh.
	until := func(want bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			st, err := r.Stat(id.PID)
			if err != nil {
				t.Fatalf("Stat(%d) = %v", id.PID, err)
			}
			if st.State != proc.Zombie || st.Threads < 2 {
				t.Fatalf("pid %d: state %c with %d threads; want a zombie leader with threads", id.PID, st.State, st.Threads)
			}
			got, err := r.GroupStopped(st)
			if err != nil {
				t.Fatalf("GroupStopped(%d) = %v", id.PID, err)
			}
			if got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("GroupStopped(%d) = %v for 30s; want %v", id.PID, got, want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	until(false)
	if err := unix.Kill(id.PID, unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	until(true)
	if err := unix.Kill(id.PID, unix.SIGCONT); err != nil {
		t.Fatal(err)
	}
	until(false)
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(); err != nil {
		t.Errorf("tgleader released: %v; want exit 0", err)
	}
}
