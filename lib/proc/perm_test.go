package proc

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"github.com/tether-sh/tether/internal/testutil"
)

// With PROC_TEST_OPEN=PID the test binary opens PID and signals it with
// 0, and says what it found: the body of TestOpenWithoutPermission, run
// as an unprivileged user.
const openAs = testutil.Role("PROC_TEST_OPEN")

// With PROC_TEST_FLOCK=exit the test binary takes a flock on its
// descriptor 3 and exits; with =close it takes it, closes 3, says
// "locked" and waits for its stdin to end: a lock left with another
// holder of the open file description, which /proc/locks still names
// the taker of.
const flockAs = testutil.Role("PROC_TEST_FLOCK")

func TestMain(m *testing.M) {
	flockAs.Serve(func(how string, _ []string) int {
		if err := syscall.Flock(3, syscall.LOCK_EX); err != nil {
			fmt.Println("flock:", err)
			return 1
		}
		if how == "close" {
			syscall.Close(3)
			fmt.Println("locked")
			io.Copy(io.Discard, os.Stdin)
		}
		return 0
	})
	openAs.Serve(func(s string, _ []string) int {
		pid, _ := strconv.Atoi(s)
		h, err := Open(ID{PID: pid})
		if err != nil {
			fmt.Println("open:", err)
			return 1
		}
		fmt.Println("open: ok; signal:", h.Signal(0))
		return 0
	})
	os.Exit(m.Run())
}

// TestOpenWithoutPermission: a live process the caller may not signal is
// alive, not gone, and signalling it is a permission error.
func TestOpenWithoutPermission(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a helper as another user")
	}
	target := exec.Command("sleep", "1000")
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { target.Process.Kill(); target.Wait() }()

	// The helper is this test binary, copied where the other user can run it.
	helper, dir := testutil.SharedCopy(t, "proc-perm-")
	c := openAs.Command(strconv.Itoa(target.Process.Pid))
	c.Path, c.Args[0] = helper, helper
	c.Dir = dir
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := c.CombinedOutput()
	want := fmt.Sprintf("open: ok; signal: pid %d: %v\n", target.Process.Pid, ErrPermission)
	if err != nil || string(out) != want {
		t.Errorf("Open and Signal(0) of root's live pid as uid 65534: %q, %v; want %q", out, err, want)
	}
}
