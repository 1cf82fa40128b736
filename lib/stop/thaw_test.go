//go:build linux

package stop

import (
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

func TestThawGuard(t *testing.T) {
	for _, tc := range []struct {
		name      string
		end       func(g *ThawGuard)
		continue_ bool
	}{
		// The caller dies: its end of the socket closes without "done".
		{"caller died", func(g *ThawGuard) { unix.Close(g.sock); g.sock = -1; g.cmd.Wait() }, true},
		// The caller finished: what it left stopped is its own choice.
		{"done", func(g *ThawGuard) { g.Done() }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, fd := stoppedChild(t)
			g, err := StartThawGuard()
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Hold(fd); err != nil {
				t.Fatalf("Hold(%d) = %v; want nil", fd, err)
			}
			tc.end(g)
			if code := g.cmd.ProcessState.ExitCode(); code != 0 {
				t.Errorf("guardian exited %d; want 0", code)
			}
			if tc.continue_ {
				waitState(t, cmd.Process.Pid, false)
			} else if st, _ := proc.ReadStat(cmd.Process.Pid); st.State != 'T' {
				t.Errorf("after Done, pid %d state %c; want T (left as it was)", cmd.Process.Pid, st.State)
			}
		})
	}
}

// A guardian that is gone fails Hold, so the member is never stopped.
func TestThawGuardLost(t *testing.T) {
	_, fd := stoppedChild(t)
	g, err := StartThawGuard()
	if err != nil {
		t.Fatal(err)
	}
	defer g.Done()
	g.cmd.Process.Kill()
	g.cmd.Process.Wait()
	if err := g.Hold(fd); err == nil {
		t.Errorf("Hold after the guardian died = nil; want an error")
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
