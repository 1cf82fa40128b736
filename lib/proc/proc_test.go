//go:build linux

package proc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/internal/testutil"
)

func TestParseStat(t *testing.T) {
	tail := " 0 0 0 0 0 0 0 0 0 0 0 0 0 3 0 98765 1 2 3\n"
	tests := []struct {
		in   string
		want Stat
		err  bool
	}{
		{"42 (sleep) S 7 42 42" + tail, Stat{PID: 42, Comm: "sleep", State: 'S', PPID: 7, PGID: 42, SID: 42, Threads: 3, Start: 98765}, false},
		{"42 (a b) c) Z 7 8 9" + tail, Stat{PID: 42, Comm: "a b) c", State: 'Z', PPID: 7, PGID: 8, SID: 9, Threads: 3, Start: 98765}, false},
		{"42 ((x)) R 1 1 1" + tail, Stat{PID: 42, Comm: "(x)", State: 'R', PPID: 1, PGID: 1, SID: 1, Threads: 3, Start: 98765}, false},
		{"42 () R 1 1 1" + tail, Stat{PID: 42, Comm: "", State: 'R', PPID: 1, PGID: 1, SID: 1, Threads: 3, Start: 98765}, false},
		{"42 (sleep) S 7 42", Stat{}, true},
		{"(sleep) S 7 42 42" + tail, Stat{}, true},
		{"x (sleep) S 7 42 42" + tail, Stat{}, true},
		{"42 sleep S 7 42 42" + tail, Stat{}, true},
		{"42 (sleep) SS 7 42 42" + tail, Stat{}, true},
		{"", Stat{}, true},
	}
	for _, tt := range tests {
		got, err := ParseStat([]byte(tt.in))
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseStat(%q) = %+v, %v; want %+v, err=%v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestParseID(t *testing.T) {
	tests := []struct {
		in   string
		want ID
		err  bool
	}{
		{"42", ID{PID: 42}, false},
		{"42@1234", ID{PID: 42, Start: 1234}, false},
		{"4194303", ID{PID: 4194303}, false},
		{"4194304", ID{}, true}, // PIDs are below the kernel's pid_max limit of 2^22
		{"0", ID{}, true},
		{"-1", ID{}, true},
		{"+5", ID{}, true},
		{" 5", ID{}, true},
		{"abc", ID{}, true},
		{"99999999999", ID{}, true},
		{"4194305", ID{}, true},
		{"42@", ID{}, true},
		{"42@0", ID{}, true},
		{"42@x", ID{}, true},
		{"@5", ID{}, true},
		{"42@5@6", ID{}, true},
		{"", ID{}, true},
	}
	for _, tt := range tests {
		got, err := ParseID(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseID(%q) = %v, %v; want %v, err=%v", tt.in, got, err, tt.want, tt.err)
		}
		if err != nil && !errors.Is(err, ErrBadID) {
			t.Errorf("ParseID(%q) error %v does not wrap ErrBadID", tt.in, err)
		}
		if err == nil && got.String() != tt.in {
			t.Errorf("ParseID(%q).String() = %q", tt.in, got.String())
		}
	}
}

func TestSafetyRefusals(t *testing.T) {
	for _, pid := range []int{-1, 0, 1, os.Getpid()} {
		if err := CheckTarget(pid); !errors.Is(err, ErrUnsafe) {
			t.Errorf("CheckTarget(%d) = %v; want ErrUnsafe", pid, err)
		}
	}
	if err := CheckTarget(os.Getppid()); err != nil {
		t.Errorf("CheckTarget(parent) = %v; want nil (a PID in our own group is allowed)", err)
	}
	for _, pg := range []int{-1, 0, 1, unix.Getpgrp()} {
		if err := CheckGroup(pg); !errors.Is(err, ErrUnsafe) {
			t.Errorf("CheckGroup(%d) = %v; want ErrUnsafe", pg, err)
		}
	}
	self, err := Open(Self())
	if err != nil {
		t.Fatalf("Open(self) = %v", err)
	}
	defer self.Close()
	if err := self.Signal(unix.SIGTERM); !errors.Is(err, ErrUnsafe) {
		t.Errorf("Handle(self).Signal = %v; want ErrUnsafe", err)
	}
}

// startSleep starts a child that sleeps until killed.
func startSleep(t *testing.T) *exec.Cmd {
	t.Helper()
	c := exec.Command("sleep", "60")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	return c
}

func TestHandleLifecycle(t *testing.T) {
	c := startSleep(t)
	id, err := Lookup(c.Process.Pid)
	if err != nil {
		t.Fatalf("Lookup(child) = %v", err)
	}
	if id.Start == 0 {
		t.Fatalf("Lookup(child).Start = 0; want the start time")
	}
	// A different START is a different process: gone, never opened.
	if _, err := Open(ID{PID: id.PID, Start: id.Start + 1}); !errors.Is(err, ErrGone) {
		t.Errorf("Open(wrong start) = %v; want ErrGone", err)
	}
	if alive, _ := Alive(ID{PID: id.PID, Start: id.Start + 1}); alive {
		t.Errorf("Alive(wrong start) = true; want false")
	}
	h, err := Open(id)
	if err != nil {
		t.Fatalf("Open(%v) = %v", id, err)
	}
	defer h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := h.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait(live) = %v; want DeadlineExceeded", err)
	}
	if h.Gone() {
		t.Fatalf("Gone(live) = true")
	}
	if err := h.Signal(unix.SIGKILL); err != nil {
		t.Fatalf("Signal(KILL) = %v", err)
	}
	// The child is now an unreaped zombie with no thread left: gone.
	if err := h.Wait(context.Background()); err != nil {
		t.Fatalf("Wait(killed) = %v", err)
	}
	if err := h.Signal(unix.SIGTERM); err == nil {
		t.Errorf("Signal(zombie) = nil; want an error")
	}
	if _, err := Open(id); !errors.Is(err, ErrGone) {
		t.Errorf("Open(zombie) = %v; want ErrGone", err)
	}
	if alive, _ := Alive(id); alive {
		t.Errorf("Alive(zombie) = true; want false")
	}
}

func TestWaitAll(t *testing.T) {
	a, b := startSleep(t), startSleep(t)
	ha, err := Open(ID{PID: a.Process.Pid})
	if err != nil {
		t.Fatal(err)
	}
	hb, err := Open(ID{PID: b.Process.Pid})
	if err != nil {
		t.Fatal(err)
	}
	defer ha.Close()
	defer hb.Close()
	a.Process.Kill()
	if err := WaitAll(context.Background(), []*Handle{ha, hb}, true); err != nil {
		t.Fatalf("WaitAll(any) = %v; want nil", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := WaitAll(ctx, []*Handle{ha, hb}, false); err == nil {
		t.Fatalf("WaitAll(all) with one alive = nil; want deadline")
	}
	b.Process.Kill()
	if err := WaitAll(context.Background(), []*Handle{ha, hb}, false); err != nil {
		t.Fatalf("WaitAll(all) = %v", err)
	}
}

func TestOpenMissing(t *testing.T) {
	if _, err := Open(ID{PID: MaxPID}); !errors.Is(err, ErrGone) {
		t.Errorf("Open(MaxPID) = %v; want ErrGone", err)
	}
	if _, err := Open(ID{PID: 0}); !errors.Is(err, ErrBadID) {
		t.Errorf("Open(0) = %v; want ErrBadID", err)
	}
}

// TestFallbackWithoutPidfd runs a handle's life on the /proc-polling path
// that kernels without pidfd_open take.
func TestFallbackWithoutPidfd(t *testing.T) {
	havePidfd() // settle the probe, then pretend it failed
	saved := pidfdUnsupported
	pidfdUnsupported = true
	defer func() { pidfdUnsupported = saved }()

	c := startSleep(t)
	id, err := Lookup(c.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ID{PID: id.PID, Start: id.Start + 1}); !errors.Is(err, ErrGone) {
		t.Errorf("Open(wrong start) = %v; want ErrGone", err)
	}
	h, err := Open(id)
	if err != nil {
		t.Fatalf("Open(%v) = %v", id, err)
	}
	if h.f != nil {
		t.Fatalf("Open used a pidfd; want the /proc fallback")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := h.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait(live) = %v; want DeadlineExceeded", err)
	}
	if err := h.Signal(unix.SIGKILL); err != nil {
		t.Fatalf("Signal(KILL) = %v", err)
	}
	if err := h.Wait(context.Background()); err != nil {
		t.Fatalf("Wait(killed) = %v", err)
	}
	if !h.Gone() {
		t.Errorf("Gone() = false after the process died")
	}
	if err := h.Signal(unix.SIGTERM); !errors.Is(err, ErrGone) {
		t.Errorf("Signal(gone) = %v; want ErrGone", err)
	}

	// PollEach polls /proc for handles without a pidfd: a live one times
	// out, a dead one is reported.
	live := startSleep(t)
	hl, err := Open(ID{PID: live.Process.Pid})
	if err != nil {
		t.Fatal(err)
	}
	var seen []int
	done, err := PollEach([]*Handle{hl}, 30*time.Millisecond, func(i int) bool { seen = append(seen, i); return false })
	if done || err != nil || len(seen) != 0 {
		t.Errorf("PollEach(live, 30ms) = %v, %v, gone %v; want a timeout", done, err, seen)
	}
	live.Process.Kill()
	done, err = PollEach([]*Handle{hl, h}, -1, func(i int) bool { seen = append(seen, i); return false })
	if !done || err != nil || len(seen) != 2 {
		t.Errorf("PollEach(both dead) = %v, %v, gone %v; want done with both", done, err, seen)
	}
}

func TestGroupOutlives(t *testing.T) {
	// A shell leads its own group and starts a member, then is killed: the
	// member outlives the leader.
	c, line := testutil.StartGroup(t, "sleep 60 & echo $! ; wait")
	memberPID, err := strconv.Atoi(line)
	if err != nil {
		t.Fatalf("member pid %q: %v", line, err)
	}
	member, err := Open(ID{PID: memberPID})
	if err != nil {
		t.Fatal(err)
	}
	defer member.Close()
	leader, err := Lookup(c.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := GroupOutlives(leader); err != nil || !got {
		t.Errorf("GroupOutlives(live leader with member) = %v, %v; want true", got, err)
	}
	leaderH, err := Open(leader)
	if err != nil {
		t.Fatal(err)
	}
	defer leaderH.Close()
	unix.Kill(leader.PID, unix.SIGKILL)
	leaderH.Wait(context.Background())
	if got, err := GroupOutlives(leader); err != nil || !got {
		t.Errorf("GroupOutlives(dead leader, live member) = %v, %v; want true", got, err)
	}
	// The member is an orphan now; once it is gone (an unreaped zombie
	// counts), nothing of the group outlives the leader.
	member.Signal(unix.SIGKILL)
	if err := member.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, err := GroupOutlives(leader); err != nil || got {
		t.Errorf("GroupOutlives(member gone) = %v, %v; want false", got, err)
	}
}

func TestWaitGroupGone(t *testing.T) {
	// The leader starts a member that outlives it, and the member starts
	// another one before it dies: WaitGroupGone returns only once the last
	// of them is gone.
	c, line := testutil.StartGroup(t, `sleep 60 & echo $! ; wait`)
	first, err := strconv.Atoi(line)
	if err != nil {
		t.Fatalf("member pid %q: %v", line, err)
	}
	leader, err := Lookup(c.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- WaitGroupGone(context.Background(), leader) }()
	unix.Kill(leader.PID, unix.SIGKILL)
	// A second member joins the group (it inherits the group of the test's
	// own child started with Setpgid).
	second := exec.Command("sleep", "60")
	second.SysProcAttr = &unix.SysProcAttr{Setpgid: true, Pgid: leader.PID}
	if err := second.Start(); err != nil {
		t.Fatalf("joining group %d: %v", leader.PID, err)
	}
	defer second.Process.Kill()
	firstH, err := Open(ID{PID: first})
	if err != nil {
		t.Fatal(err)
	}
	defer firstH.Close()
	firstH.Signal(unix.SIGKILL)
	firstH.Wait(context.Background())
	select {
	case err := <-done:
		// Say whether the member really lives: a test elsewhere that
		// signals a recycled PID could have killed it.
		alive, aerr := Alive(ID{PID: second.Process.Pid})
		st, serr := ReadStat(second.Process.Pid)
		lst, lerr := ReadStat(leader.PID)
		members, merr := GroupMembers(leader.PID)
		t.Fatalf("WaitGroupGone returned %v while member %d lives (alive now: %v, %v; its stat %+v, %v; "+
			"leader %v now %+v, %v; group members %v, %v)",
			err, second.Process.Pid, alive, aerr, st, serr, leader, lst, lerr, members, merr)
	case <-time.After(50 * time.Millisecond):
	}
	second.Process.Kill()
	second.Wait()
	if err := <-done; err != nil {
		t.Fatalf("WaitGroupGone = %v", err)
	}
	if got, _ := GroupOutlives(leader); got {
		t.Error("GroupOutlives after WaitGroupGone = true; want false")
	}
}

// TestOpenThread: the id of a thread that is not its group's leader is
// bad input, said as such, not a process that is gone.
func TestOpenThread(t *testing.T) {
	if !havePidfd() {
		t.Skip("no pidfd_open here")
	}
	// Three goroutines each hold a thread of their own; at most one of
	// them can be the main thread, the group leader.
	tids := make(chan int, 3)
	release := make(chan struct{})
	defer close(release)
	for i := 0; i < 3; i++ {
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			tids <- unix.Gettid()
			<-release
		}()
	}
	id := <-tids
	if id == os.Getpid() {
		id = <-tids
	}
	_, err := Open(ID{PID: id})
	if !errors.Is(err, ErrBadID) || !strings.Contains(err.Error(), "is a thread") {
		t.Errorf("Open(thread %d) = %v; want ErrBadID saying it is a thread", id, err)
	}
}
