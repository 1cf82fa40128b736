//go:build linux

package stop

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/proc"
)

// stoppedChild starts a process, stops it, and returns it with a pidfd.
func stoppedChild(t *testing.T) (*exec.Cmd, int) {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	fd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.PidfdSendSignal(fd, unix.SIGSTOP, nil, 0); err != nil {
		t.Fatal(err)
	}
	waitState(t, cmd.Process.Pid, true)
	return cmd, fd
}

// waitState waits, within a bound, until pid is stopped (or is not).
func waitState(t *testing.T, pid int, stopped bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := proc.ReadStat(pid)
		if err != nil {
			t.Fatal(err)
		}
		if (st.State == 'T') == stopped {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d state %c; want stopped %v", pid, st.State, stopped)
		}
		time.Sleep(time.Millisecond)
	}
}

// guardianHandle waits for g to be ready (through a Hold of nothing
// stopped) and returns a handle on the guardian process.
func guardianHandle(t *testing.T, g *ThawGuard, fd int, id proc.ID) *proc.Handle {
	t.Helper()
	if err := g.Hold(fd, id); err != nil {
		t.Fatalf("Hold(%d, %v) = %v; want nil", fd, id, err)
	}
	h, err := proc.Open(proc.ID{PID: g.PID()})
	if err != nil {
		t.Fatalf("open the guardian %d: %v", g.PID(), err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// waitGone waits, within a bound, for h's process to exit.
func waitGone(t *testing.T, h *proc.Handle) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.Wait(ctx); err != nil {
		t.Fatalf("guardian %d still there: %v", h.ID().PID, err)
	}
}

func TestThawGuard(t *testing.T) {
	for _, tc := range []struct {
		name      string
		pidfd     bool // hand over the pidfd, or only PID@START
		end       func(g *ThawGuard)
		continue_ bool
	}{
		// The caller dies: its end of the socket closes without "done".
		{"caller died", true, func(g *ThawGuard) { unix.Close(g.sock); g.sock = -1 }, true},
		{"caller died, no pidfd", false, func(g *ThawGuard) { unix.Close(g.sock); g.sock = -1 }, true},
		// The caller finished: what it left stopped is its own choice.
		{"done", true, func(g *ThawGuard) { g.Done() }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, fd := stoppedChild(t)
			id, err := proc.Lookup(cmd.Process.Pid)
			if err != nil {
				t.Fatal(err)
			}
			g, err := StartThawGuard()
			if err != nil {
				t.Fatal(err)
			}
			if !tc.pidfd {
				fd = -1
			}
			h := guardianHandle(t, g, fd, id)
			tc.end(g)
			waitGone(t, h)
			if tc.continue_ {
				waitState(t, cmd.Process.Pid, false)
			} else if st, _ := proc.ReadStat(cmd.Process.Pid); st.State != 'T' {
				t.Errorf("after Done, pid %d state %c; want T (left as it was)", cmd.Process.Pid, st.State)
			}
		})
	}
}

// The guardian is no descendant of its stopper, and is in a session of
// its own: a tree stop of the stopper's supervisor, or a signal to the
// stopper's group or terminal, does not reach it.
func TestThawGuardOutsideStopperTree(t *testing.T) {
	_, fd := stoppedChild(t)
	g, err := StartThawGuard()
	if err != nil {
		t.Fatal(err)
	}
	defer g.Done()
	h := guardianHandle(t, g, -1, proc.ID{PID: 1, Start: 1})
	defer unix.Close(fd)
	if inside, err := h.DescendsFrom(proc.Self()); err != nil || inside {
		t.Errorf("guardian %d DescendsFrom(stopper) = %v, %v; want false", g.PID(), inside, err)
	}
	st, err := proc.ReadStat(g.PID())
	if err != nil {
		t.Fatal(err)
	}
	if st.PPID == os.Getpid() {
		t.Errorf("guardian %d has PPID %d = the stopper; want it re-parented away", g.PID(), st.PPID)
	}
	if st.SID != g.PID() {
		t.Errorf("guardian %d in session %d; want its own", g.PID(), st.SID)
	}
}

// A guardian that is gone fails Hold, so the member is never stopped; and
// Ensure, run before every freeze, replaces it.
func TestThawGuardLost(t *testing.T) {
	_, fd := stoppedChild(t)
	g, err := StartThawGuard()
	if err != nil {
		t.Fatal(err)
	}
	defer g.Done()
	h := guardianHandle(t, g, -1, proc.ID{PID: 1, Start: 1})
	gen := g.Gen()
	if err := h.Signal(unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, h)
	if err := g.Hold(fd, proc.ID{PID: 1, Start: 1}); err == nil {
		t.Errorf("Hold after the guardian died = nil; want an error")
	}
	if err := g.Ensure(); err != nil {
		t.Fatalf("Ensure() = %v; want a new guardian", err)
	}
	if g.Gen() == gen {
		t.Errorf("Gen() = %d after Ensure replaced the guardian; want it to move on", g.Gen())
	}
	h2 := guardianHandle(t, g, fd, proc.ID{PID: 1, Start: 1})
	if h2.ID().PID == h.ID().PID && h2.ID().Start == h.ID().Start {
		t.Errorf("Ensure kept the dead guardian %v", h.ID())
	}
	// A live guardian is kept.
	if err := g.Ensure(); err != nil || g.Gen() != gen+1 {
		t.Errorf("Ensure() with a live guardian = %v, Gen %d; want nil, %d", err, g.Gen(), gen+1)
	}
}

func BenchmarkThawGuard(b *testing.B) {
	for b.Loop() {
		g, err := StartThawGuard()
		if err != nil {
			b.Fatal(err)
		}
		g.Done()
	}
}
