package proc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/internal/testutil"
)

// haveExitInfo skips a test on a kernel without PIDFD_INFO_EXIT.
func haveExitInfo(t *testing.T) {
	t.Helper()
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		t.Skipf("no pidfd: %v", err)
	}
	defer unix.Close(fd)
	info := unix.PidfdInfo{Mask: unix.PIDFD_INFO_PID | unix.PIDFD_INFO_EXIT}
	if err := unix.IoctlPidfdInfo(fd, &info); err != nil {
		t.Skipf("no PIDFD_GET_INFO: %v", err)
	}
	var u unix.Utsname
	unix.Uname(&u)
	rel := unix.ByteSliceToString(u.Release[:])
	var major, minor int
	fmt.Sscanf(rel, "%d.%d", &major, &minor)
	if major < 6 || major == 6 && minor < 15 {
		t.Skipf("kernel %s has no PIDFD_INFO_EXIT", rel)
	}
}

// startHeld runs `sh -c "read x; script"`: the script runs only once the
// returned release function is called, so a handle is held before it.
// The child is reaped at cleanup if the test did not.
func startHeld(t *testing.T, script string) (*exec.Cmd, *Handle, func()) {
	t.Helper()
	c := exec.Command("sh", "-c", "read x; "+script)
	w, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	reaped := false
	t.Cleanup(func() {
		if !reaped {
			c.Process.Kill()
			c.Wait()
		}
	})
	h, err := Open(ID{PID: c.Process.Pid})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return c, h, func() { w.Close() }
}

// waitGone waits, without reaping, until h's process has exited.
func waitGone(t *testing.T, h *Handle) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.Wait(ctx); err != nil {
		t.Fatalf("Wait(pid %d) = %v; want nil", h.ID().PID, err)
	}
}

// TestExitInfo covers a child that exits or is killed, reaped by us or
// left a zombie, and a grandchild its own parent reaps.
func TestExitInfo(t *testing.T) {
	haveExitInfo(t)
	tests := []struct {
		name   string
		script string
		reap   bool
		want   ExitInfo
	}{
		{"exit 3 reaped", "exit 3", true, ExitInfo{Code: 3, Reaped: true}},
		{"exit 0 reaped", "exit 0", true, ExitInfo{Code: 0, Reaped: true}},
		{"KILL reaped", "kill -KILL $$", true, ExitInfo{Signal: unix.SIGKILL, Reaped: true}},
		{"exit 3 zombie", "exit 3", false, ExitInfo{Code: 3}},
		{"exit 0 zombie", "exit 0", false, ExitInfo{Code: 0}},
		{"KILL zombie", "kill -KILL $$", false, ExitInfo{Signal: unix.SIGKILL}},
		{"TERM zombie", "kill -TERM $$", false, ExitInfo{Signal: unix.SIGTERM}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, h, release := startHeld(t, tt.script)
			if _, err := h.ExitInfo(); !errors.Is(err, ErrExitUnknown) {
				t.Errorf("ExitInfo() of a running process: err = %v; want %v", err, ErrExitUnknown)
			}
			release()
			waitGone(t, h)
			if tt.reap {
				c.Wait()
			}
			got, err := h.ExitInfo()
			if err != nil || got != tt.want {
				t.Errorf("ExitInfo() after %q (reaped %v) = %+v, %v; want %+v", tt.script, tt.reap, got, err, tt.want)
			}
		})
	}
}

// TestExitInfoWhileReaped asks for the status of exited children again and
// again while another thread reaps them: a query that meets the reaping
// half done must still give the status, never "unknown" (with one query,
// the kernel said ESRCH in a quarter of these races: watchpid_status_kill
// failed in CI).
func TestExitInfoWhileReaped(t *testing.T) {
	haveExitInfo(t)
	const children = 300
	for i := range children {
		c := exec.Command("sh", "-c", "exit 7")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		h, err := OpenUnreaped(ID{PID: c.Process.Pid})
		if err != nil {
			c.Wait()
			t.Fatalf("OpenUnreaped(child %d) = %v", i, err)
		}
		waitGone(t, h)
		reaped := make(chan struct{})
		go func() {
			c.Wait()
			close(reaped)
		}()
		for done := false; !done; {
			select {
			case <-reaped:
				done = true
			default:
			}
			got, err := h.ExitInfo()
			if err != nil || got.Code != 7 || got.Signal != 0 {
				t.Fatalf("ExitInfo() of child %d while it is reaped = %+v, %v; want code 7", i, got, err)
			}
		}
		h.Close()
	}
}

// TestExitInfoNotChild: the status of a process that is not ours, reaped
// by its own parent, still reads through the pidfd held before its exit.
func TestExitInfoNotChild(t *testing.T) {
	haveExitInfo(t)
	// The outer shell says "reaped" once its wait returned. The grandchild
	// reads our pipe through descriptor 3: a shell without job control
	// gives a background job /dev/null for stdin, and a grandchild reading
	// that would exit before the pidfd is opened.
	c := exec.Command("sh", "-c", `exec 3<&0; sh -c 'read x <&3; exit 7' & echo $!; wait $!; echo reaped; read y`)
	in, _ := c.StdinPipe()
	out, _ := c.StdoutPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); c.Process.Kill(); c.Wait() }()
	r := bufio.NewReader(out)
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	h, err := Open(ID{PID: pid})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	// The grandchild shares our stdin pipe: one line releases it.
	io.WriteString(in, "\n")
	if line, err := r.ReadString('\n'); err != nil || line != "reaped\n" {
		t.Fatalf("outer shell said %q, %v; want reaped", line, err)
	}
	got, err := h.ExitInfo()
	if want := (ExitInfo{Code: 7, Reaped: true}); err != nil || got != want {
		t.Errorf("ExitInfo() of a grandchild its parent reaped = %+v, %v; want %+v", got, err, want)
	}
}

// TestOpenUnreaped: a zombie is gone for Open, but OpenUnreaped holds it
// and reads its status; a reaped process is gone for both.
func TestOpenUnreaped(t *testing.T) {
	haveExitInfo(t)
	c, h, release := startHeld(t, "exit 5")
	id := h.ID()
	release()
	waitGone(t, h)
	if _, err := Open(id); !errors.Is(err, ErrGone) {
		t.Errorf("Open(zombie %v) = %v; want %v", id, err, ErrGone)
	}
	if _, err := OpenUnreaped(ID{PID: id.PID, Start: id.Start + 1}); !errors.Is(err, ErrGone) {
		t.Errorf("OpenUnreaped(zombie with another START) = %v; want %v", err, ErrGone)
	}
	z, err := OpenUnreaped(id)
	if err != nil {
		t.Fatalf("OpenUnreaped(zombie %v) = %v; want a handle", id, err)
	}
	defer z.Close()
	if !z.Gone() || z.ID() != id {
		t.Errorf("OpenUnreaped(zombie %v): Gone() = %v, ID() = %v; want true, %v", id, z.Gone(), z.ID(), id)
	}
	if got, err := z.ExitInfo(); err != nil || got != (ExitInfo{Code: 5}) {
		t.Errorf("ExitInfo() of zombie = %+v, %v; want exited 5, not reaped", got, err)
	}
	c.Wait()
	if got, err := z.ExitInfo(); err != nil || got != (ExitInfo{Code: 5, Reaped: true}) {
		t.Errorf("ExitInfo() after the reap = %+v, %v; want exited 5, reaped", got, err)
	}
	if _, err := OpenUnreaped(id); !errors.Is(err, ErrGone) {
		t.Errorf("OpenUnreaped(reaped %v) = %v; want %v", id, err, ErrGone)
	}
}

func TestStatField(t *testing.T) {
	// Fields 3..52 after the name: field n is value n here.
	var b strings.Builder
	b.WriteString("42 (a) b) c)")
	for n := 3; n <= 52; n++ {
		fmt.Fprintf(&b, " %d", n)
	}
	line := []byte(b.String() + "\n")
	tests := []struct {
		line []byte
		n    int
		want uint64
		ok   bool
	}{
		{line, 52, 52, true},
		{line, 22, 22, true},
		{line, 53, 0, false},
		{[]byte("42 (x) Z 1 2"), 52, 0, false},
		{[]byte("no name"), 52, 0, false},
		{[]byte("42 (x) Z 1 -5"), 5, 0, false},
	}
	for _, tt := range tests {
		got, ok := statField(tt.line, tt.n)
		if got != tt.want || ok != tt.ok {
			t.Errorf("statField(%q, %d) = %d, %v; want %d, %v", tt.line, tt.n, got, ok, tt.want, tt.ok)
		}
	}
}

// TestExitInfoOtherUsersZombie: the kernel shows another user's zombie's
// status as 0; that must read as unknown, never as "exited 0".
func TestExitInfoOtherUsersZombie(t *testing.T) {
	if pid := os.Getenv("PROC_TEST_EXITINFO"); pid != "" {
		id, _ := ParseID(pid)
		h, err := OpenUnreaped(id)
		if err != nil {
			fmt.Println("open:", err)
			return
		}
		info, err := h.ExitInfo()
		fmt.Printf("info: %v %v\n", info, errors.Is(err, ErrExitUnknown))
		return
	}
	haveExitInfo(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a helper as another user")
	}
	_, h, release := startHeld(t, "exit 4")
	release()
	waitGone(t, h)
	// Not t.TempDir: its parent is not searchable by the other user.
	helper, dir := testutil.SharedCopy(t, "proc-exitinfo-")
	c := testutil.Role("PROC_TEST_EXITINFO").Command(h.ID().String(), "-test.run=^TestExitInfoOtherUsersZombie$")
	c.Path, c.Args[0] = helper, helper
	c.Dir = dir
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := c.CombinedOutput()
	want := "info: exited 0 true\n"
	if err != nil || !strings.HasPrefix(string(out), want) {
		t.Errorf("ExitInfo() of root's zombie (exit 4) as uid 65534: %q, %v; want %q", out, err, want)
	}
}

func TestSameCreds(t *testing.T) {
	status := func(uids, gids string) []byte {
		return []byte("Name:\tsh\nState:\tZ (zombie)\nUid:\t" + uids + "\nGid:\t" + gids + "\nGroups:\t\n")
	}
	tests := []struct {
		in       []byte
		uid, gid int
		want     bool
	}{
		{status("1000\t1000\t1000\t1000", "100\t100\t100\t100"), 1000, 100, true},
		{status("1000\t1000\t1000\t0", "100\t100\t100\t100"), 1000, 100, true}, // fsuid is not compared
		{status("1000\t0\t1000\t0", "100\t100\t100\t100"), 1000, 100, false},   // setuid root
		{status("1000\t1000\t0\t1000", "100\t100\t100\t100"), 1000, 100, false},
		{status("1000\t1000\t1000\t1000", "100\t50\t100\t100"), 1000, 100, false},
		{status("0\t0\t0\t0", "0\t0\t0\t0"), 1000, 100, false},
		{status("1000 1000", "100\t100\t100\t100"), 1000, 100, false},
		{[]byte("Name:\tsh\n"), 0, 0, false},
	}
	for _, tt := range tests {
		if got := sameCreds(tt.in, tt.uid, tt.gid); got != tt.want {
			t.Errorf("sameCreds(%q, %d, %d) = %v; want %v", tt.in, tt.uid, tt.gid, got, tt.want)
		}
	}
}
