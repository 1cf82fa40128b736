package proc

import (
	"bufio"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestFlockHolder: /proc/locks names the process that took a flock; it is
// the holder only while it has the file open. A lock taken by a process
// that exited, or closed the file, and left the open file description to
// another, names nobody: that PID may be anyone's by now.
func TestFlockHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	f, err := os.Create(path) // the description the lock is taken on
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	asked, err := os.Open(path) // another description, to ask about
	if err != nil {
		t.Fatal(err)
	}
	defer asked.Close()
	unlock := func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

	// This process takes it, and holds it.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if id, comm, ok := FlockHolder(int(asked.Fd())); !ok || id.PID != os.Getpid() || comm == "" {
		t.Errorf("FlockHolder, taken and held here = %v %q %v; want pid %d, ok", id, comm, ok, os.Getpid())
	}
	unlock()

	// A child takes it and exits; this process holds it through f.
	c := flockAs.Command("exit")
	c.ExtraFiles = []*os.File{f}
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("child: %v: %s", err, out)
	}
	if id, _, ok := FlockHolder(int(asked.Fd())); ok || id.PID != c.Process.Pid {
		t.Errorf("FlockHolder, taken by pid %d, which exited = %v %v; want that PID, not ok", c.Process.Pid, id, ok)
	}
	unlock()

	// A child takes it, closes the file and lives on.
	c = flockAs.Command("close")
	c.ExtraFiles = []*os.File{f}
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); c.Wait() }()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "locked\n" {
		t.Fatalf("child said %q, %v; want locked", line, err)
	}
	if id, _, ok := FlockHolder(int(asked.Fd())); ok || id.PID != c.Process.Pid {
		t.Errorf("FlockHolder, taken by pid %d, which closed the file = %v %v; want that PID, not ok", c.Process.Pid, id, ok)
	}
	unlock()
}
