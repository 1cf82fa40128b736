package stopbounded

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/exit"
)

func TestPidfileExit(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("ok.pid", " 42@7\n", 0o644)
	fifo := filepath.Join(dir, "fifo.pid")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.pid")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	root := os.Geteuid() == 0
	nobody := write("nobody.pid", "42\n", 0o644)
	if root {
		if err := os.Chown(nobody, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name     string
		path     string
		rootOnly bool // the refusal applies to root only
		want     int
		msg      string
	}{
		{"missing", filepath.Join(dir, "none.pid"), false, exit.Usage, "no such file"},
		{"empty", write("empty.pid", "\n", 0o644), false, exit.Usage, "is empty"},
		{"two words", write("two.pid", "12 34\n", 0o644), false, exit.Usage, "holds 2 words"},
		{"not a pid", write("bad.pid", "-1\n", 0o644), false, exit.Usage, "invalid process id"},
		{"too big", write("big.pid", strings.Repeat(" ", pidfileMax)+"42\n", 0o644), false, exit.Usage, "larger than"},
		{"a directory", dir, false, exit.Usage, "not a regular file (a directory)"},
		{"a FIFO", fifo, false, exit.Usage, "not a regular file (a FIFO)"},
		{"/dev/zero", "/dev/zero", false, exit.Usage, "not a regular file (a character device)"},
		{"a symlink", link, false, exit.Usage, "symbolic link"},
		{"owned by nobody", nobody, true, exit.System, "owned by uid 65534"},
		{"group-writable", write("group.pid", "42\n", 0o664), true, exit.System, "writable by its group or others"},
		{"world-writable", write("world.pid", "42\n", 0o646), true, exit.System, "writable by its group or others"},
	} {
		if tc.rootOnly && !root {
			continue
		}
		err := readErr(t, tc.path)
		if err == nil {
			t.Errorf("readPidfile(%s) accepted it", tc.name)
			continue
		}
		if got := pidfileExit(err); got != tc.want || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("readPidfile(%s) = %v, exit %d; want %q, exit %d", tc.name, err, got, tc.msg, tc.want)
		}
	}
	// Root reads any file, so these are made the way readPidfile wraps them.
	for _, err := range []error{fmt.Errorf("pidfile p: %w", syscall.EACCES), fmt.Errorf("pidfile p: %w", syscall.EIO)} {
		if got := pidfileExit(err); got != exit.System {
			t.Errorf("pidfileExit(%v) = %d; want %d", err, got, exit.System)
		}
	}
	if got, err := readPidfile(good); got != "42@7" || err != nil {
		t.Errorf("readPidfile(ok.pid) = %q, %v; want 42@7", got, err)
	}
	if !root {
		// Not root: another user's or a group-writable pidfile is fine.
		if got, err := readPidfile(write("group2.pid", "43\n", 0o664)); got != "43" || err != nil {
			t.Errorf("readPidfile(group-writable) as uid %d = %q, %v; want 43", os.Geteuid(), got, err)
		}
	}
}

func TestCheckPidfileOwner(t *testing.T) {
	for _, tc := range []struct {
		euid    int
		uid     uint32
		mode    uint32
		refused bool
	}{
		{0, 0, 0o644, false},
		{0, 0, 0o600, false},
		{0, 0, 0o664, true},
		{0, 0, 0o646, true},
		{0, 65534, 0o644, true},
		{0, 1000, 0o600, true},
		{1000, 1000, 0o666, false}, // not root: nothing to protect
		{1000, 0, 0o644, false},
		{1000, 65534, 0o644, false},
	} {
		err := checkPidfileOwner("p", tc.euid, tc.uid, tc.mode)
		if (err != nil) != tc.refused {
			t.Errorf("checkPidfileOwner(euid %d, uid %d, mode %04o) = %v; want refused %v", tc.euid, tc.uid, tc.mode, err, tc.refused)
		}
	}
}

// readErr reads path, failing the test if that does not return promptly
// (a FIFO or a device must never block or be read forever).
func readErr(t *testing.T, path string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := readPidfile(path)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("readPidfile(%s) did not return within 10s", path)
		return nil
	}
}
