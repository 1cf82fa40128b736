package proc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// With PROC_TEST_OPEN=PID the test binary opens PID and signals it with
// 0, and says what it found: the body of TestOpenWithoutPermission, run
// as an unprivileged user.
func TestMain(m *testing.M) {
	if s := os.Getenv("PROC_TEST_OPEN"); s != "" {
		pid, _ := strconv.Atoi(s)
		h, err := Open(ID{PID: pid})
		if err != nil {
			fmt.Println("open:", err)
			os.Exit(1)
		}
		fmt.Println("open: ok; signal:", h.Signal(0))
		os.Exit(0)
	}
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
	dir, err := os.MkdirTemp("", "proc-perm-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	helper := filepath.Join(dir, "helper")
	if err := copyExecutable(self, helper); err != nil {
		t.Fatal(err)
	}
	c := exec.Command(helper)
	c.Env = append(os.Environ(), "PROC_TEST_OPEN="+strconv.Itoa(target.Process.Pid))
	c.Dir = dir
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := c.CombinedOutput()
	want := fmt.Sprintf("open: ok; signal: pid %d: %v\n", target.Process.Pid, ErrPermission)
	if err != nil || string(out) != want {
		t.Errorf("Open and Signal(0) of root's live pid as uid 65534: %q, %v; want %q", out, err, want)
	}
}

func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}
