package proc

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// TestChildren: Children finds the children of every thread of a
// process, a zombie among them, and says ErrGone for a PID no process
// can have.
func TestChildren(t *testing.T) {
	// Forked from this thread, locked, so that the other goroutine's
	// child has another thread for its parent.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := func(argv ...string) *exec.Cmd {
		t.Helper()
		c := exec.Command(argv[0], argv[1:]...)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		return c
	}
	sleeper := start("sleep", "1000")
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	zombie := start("true")
	defer zombie.Wait()
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, zombie.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	other, release := make(chan *exec.Cmd), make(chan struct{})
	go func() {
		// Locked until release: a thread that exits hands its children on.
		runtime.LockOSThread()
		c := exec.Command("sleep", "1000")
		if c.Start() != nil {
			c = nil
		}
		other <- c
		<-release
		runtime.UnlockOSThread()
	}()
	fromOther := <-other
	defer close(release)
	if fromOther == nil {
		t.Fatal("cannot start sleep from another thread")
	}
	defer func() { fromOther.Process.Kill(); fromOther.Wait() }()

	kids, err := Children(os.Getpid())
	if err != nil {
		t.Fatalf("Children(self) = %v, %v; want no error", kids, err)
	}
	var pids []int
	for _, k := range kids {
		pids = append(pids, k.PID)
	}
	for _, c := range []*exec.Cmd{sleeper, zombie, fromOther} {
		if !slices.Contains(pids, c.Process.Pid) {
			t.Errorf("Children(self) = %v; want %d (%s) among them", pids, c.Process.Pid, c.Path)
		}
	}
	if kids, err := Children(MaxPID); !errors.Is(err, ErrGone) {
		t.Errorf("Children(%d) = %v, %v; want ErrGone", MaxPID, kids, err)
	}
}
