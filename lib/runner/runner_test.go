//go:build linux

package runner_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/exit"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/internal/testutil"
	"github.com/tether-sh/tether/lib/proc"
	"github.com/tether-sh/tether/lib/runner"
)

// TestMain runs the tests with no signal ignored but those they ignore
// themselves (testutil.DefaultSignals).
func TestMain(m *testing.M) { testutil.Main(m) }

// Run owns wait4 for the whole process, so these tests never run in
// parallel and never start children any other way.

// noChildren fails if this process still has a child of any kind, zombie
// included: Run must have stopped and reaped everything.
func noChildren(t *testing.T) {
	t.Helper()
	var left []string
	proc.Scan(func(st proc.Stat) {
		if st.PPID == os.Getpid() {
			left = append(left, strconv.Itoa(st.PID)+" ("+st.Comm+" "+string(st.State)+")")
		}
	})
	if len(left) > 0 {
		t.Errorf("children left after Run: %v; want none", left)
	}
}

func sh(script string) []string { return []string{"sh", "-c", script} }

// waitFor defines waitfor FILE: block until FILE exists and is not empty.
const waitFor = `waitfor() { while [ ! -s "$1" ]; do sleep 0.01; done; }
`

func TestRunStatus(t *testing.T) {
	tests := []struct {
		name     string
		argv     []string
		code     int
		signaled bool
	}{
		{"success", sh("exit 0"), 0, false},
		{"failure", sh("exit 3"), 3, false},
		{"signal", sh("kill -TERM $$"), 128 + 15, true},
		{"kill", sh("kill -KILL $$"), 128 + 9, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := runner.Run(context.Background(), runner.Options{Argv: tt.argv, Grace: time.Second})
			if err != nil {
				t.Fatalf("Run(%q) error = %v; want nil", tt.argv, err)
			}
			if res.Code() != tt.code || res.Signaled != tt.signaled {
				t.Errorf("Run(%q) = code %d signaled %v; want %d %v", tt.argv, res.Code(), res.Signaled, tt.code, tt.signaled)
			}
			if len(res.Leftovers) != 0 {
				t.Errorf("Run(%q) leftovers = %v; want none", tt.argv, res.Leftovers)
			}
			noChildren(t)
		})
	}
}

func TestRunStartErrors(t *testing.T) {
	tests := []struct {
		name string
		o    runner.Options
		code int
	}{
		{"not found", runner.Options{Argv: []string{"tether-no-such-command"}}, exit.NotFound},
		{"missing path", runner.Options{Argv: []string{"/nonexistent/x"}}, exit.NotFound},
		{"not executable", runner.Options{Argv: []string{"/etc/passwd"}}, exit.NoExec},
		{"directory", runner.Options{Argv: []string{"/"}}, exit.NoExec},
		{"empty", runner.Options{}, exit.NotRun},
		{"bad dir", runner.Options{Argv: []string{"true"}, Dir: "/nonexistent"}, exit.NotRun},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := runner.Run(context.Background(), tt.o)
			if got := exit.Code(err, -1); got != tt.code {
				t.Errorf("Run(%q) = %v (code %d); want code %d", tt.o.Argv, err, got, tt.code)
			}
		})
	}
}

// TestRunLeftovers: everything the command leaves behind is stopped and
// reaped, bounded by the grace, and returns early when all go on TERM.
func TestRunLeftovers(t *testing.T) {
	tests := []struct {
		name    string
		script  string
		min     int    // leftovers reported at least
		killed  bool   // some needed KILL
		pidfile string // each line a PID that must be gone
	}{
		{
			name:   "background, setsid, double fork",
			script: `sleep 100 & echo $! >>pids; setsid sleep 100 & echo $! >>pids; sh -c 'sleep 100 & echo $! >>pids'`,
			min:    3,
		},
		{
			name:   "TERM ignored",
			script: waitFor + `(trap '' TERM; echo >ready; exec sleep 100) & echo $! >>pids; sleep 100 & echo $! >>pids; waitfor ready`,
			min:    2,
			killed: true,
		},
		{
			name: "zombie never reaped by its parent",
			// The parent becomes sleep, which never reaps; then its worker
			// is killed. The payload leaves once the worker is a zombie.
			script: waitFor + `sh -c 'sleep 100 & echo $! >z; exec sleep 100' & echo $! >>pids
				waitfor z; z=$(cat z); echo $z >>pids
				until grep -q '^[0-9]* (sleep) S' /proc/$(head -1 pids)/stat; do sleep 0.01; done
				kill -KILL $z
				until grep -q '^[0-9]* (sleep) Z' /proc/$z/stat 2>/dev/null || [ ! -e /proc/$z ]; do sleep 0.01; done`,
			min: 2,
		},
		{
			name: "group and session leaders with children",
			script: waitFor + `setsid sh -c 'sleep 100 & echo $! >a; wait' & echo $! >>pids
				bash -c 'set -m; sleep 100 & echo $! >b; wait' & echo $! >>pids
				waitfor a; waitfor b; cat a b >>pids`,
			min: 4,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			// A long grace shows that Run returns the moment the leftovers
			// are gone; a TERM-ignoring one keeps the test short.
			grace := 5 * time.Second
			if tt.killed {
				grace = 300 * time.Millisecond
			}
			start := time.Now()
			res, err := runner.Run(context.Background(), runner.Options{Argv: sh(tt.script), Dir: dir, Grace: grace})
			elapsed := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			if res.Code() != 0 {
				t.Errorf("Run = code %d survivors %v; want 0", res.Code(), res.Survivors)
			}
			if len(res.Leftovers) < tt.min {
				t.Errorf("Run leftovers = %v; want at least %d", res.Leftovers, tt.min)
			}
			if got := len(res.Killed) > 0; got != tt.killed {
				t.Errorf("Run killed = %v; want some: %v", res.Killed, tt.killed)
			}
			if !tt.killed && res.Cleanup >= grace {
				t.Errorf("Run cleanup took %v; want less than the %v grace (all went on TERM)", res.Cleanup, grace)
			}
			if elapsed > grace+5*time.Second {
				t.Errorf("Run took %v; want at most grace + KILL wait", elapsed)
			}
			b, err := os.ReadFile(filepath.Join(dir, "pids"))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range strings.Fields(string(b)) {
				pid, _ := strconv.Atoi(f)
				if alive, _ := proc.Alive(proc.ID{PID: pid}); alive {
					t.Errorf("leftover %d alive after Run; want gone", pid)
				}
				if !slices.ContainsFunc(res.Leftovers, func(id proc.ID) bool { return id.PID == pid }) {
					t.Errorf("leftover %d not reported in %v", pid, res.Leftovers)
				}
			}
			noChildren(t)
		})
	}
}

// TestRunForkLoop: a leftover that forks as fast as it can, ignoring TERM,
// ends with nothing left.
func TestRunForkLoop(t *testing.T) {
	script := waitFor + `trap '' TERM
		sh -c 'while :; do sleep 100 & echo >a; done' &
		sh -c 'while :; do sh -c "sleep 100 &"; echo >b; done' &
		waitfor a; waitfor b`
	res, err := runner.Run(context.Background(), runner.Options{Argv: sh(script), Dir: t.TempDir(), Grace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Code() != 0 || len(res.Survivors) > 0 {
		t.Errorf("Run(fork loop) = code %d survivors %v; want 0, none", res.Code(), res.Survivors)
	}
	if len(res.Leftovers) < 3 {
		t.Errorf("Run(fork loop) leftovers = %d; want many", len(res.Leftovers))
	}
	t.Logf("%d leftovers, %d killed", len(res.Leftovers), len(res.Killed))
	noChildren(t)
}

func TestRunDeadline(t *testing.T) {
	tests := []struct {
		name   string
		script string
	}{
		{"sleeps", `sleep 100`},
		{"ignores TERM", `trap '' TERM; sleep 100 & wait; wait`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			res, err := runner.Run(context.Background(), runner.Options{
				Argv: sh(tt.script), Grace: 300 * time.Millisecond, Deadline: 100 * time.Millisecond,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Code() != exit.Deadline || !res.DeadlineHit {
				t.Errorf("Run(deadline) = code %d hit %v; want 124 true", res.Code(), res.DeadlineHit)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Run(deadline) took %v (cleanup %v); want about deadline + grace", d, res.Cleanup)
			}
			noChildren(t)
		})
	}
}

func TestRunCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	res, err := runner.Run(ctx, runner.Options{
		Argv: sh("sleep 100"), Grace: time.Second,
		OnStart: func(proc.ID) error { cancel(); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Canceled || res.DeadlineHit || res.Code() != 128+15 {
		t.Errorf("Run(canceled) = canceled %v deadline %v code %d; want true false 143", res.Canceled, res.DeadlineHit, res.Code())
	}
	noChildren(t)
}

// TestRunOnStartAndForward: OnStart gets the child's identity, and a
// signal to the runner reaches the command's process group.
func TestRunOnStartAndForward(t *testing.T) {
	dir := t.TempDir()
	var child atomic.Value
	// The shell traps USR1; its sleep does not, so it dies of USR1 (138)
	// only if the signal reached the whole group, not just the shell. A
	// guard KILLs the sleep after 5s (137) if it did not.
	// The signal is sent only once the sleep has exec'd: a forked shell
	// that has not yet would run the inherited trap instead of dying.
	script := `trap 'echo got >got' USR1; sleep 100 & sp=$!; (sleep 5; kill -KILL $sp) & echo $sp >ready; wait $sp; wait $sp; echo $? >sleepstatus; exit 7`
	res, err := runner.Run(context.Background(), runner.Options{
		Argv: sh(script), Dir: dir, Grace: time.Second,
		OnStart: func(id proc.ID) error {
			child.Store(id)
			go func() {
				for {
					b, err := os.ReadFile(filepath.Join(dir, "ready"))
					if err == nil && len(b) > 0 && b[len(b)-1] == '\n' {
						comm, _ := os.ReadFile("/proc/" + strings.TrimSpace(string(b)) + "/comm")
						if string(comm) == "sleep\n" {
							break
						}
					}
					time.Sleep(2 * time.Millisecond)
				}
				unix.Kill(os.Getpid(), unix.SIGUSR1)
			}()
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := child.Load().(proc.ID); got != res.Child || got.Start == 0 {
		t.Errorf("OnStart got %v; want %v with a start time", got, res.Child)
	}
	if res.Code() != 7 {
		t.Errorf("Run(forward USR1) = code %d; want 7 (the trap ran)", res.Code())
	}
	if _, err := os.Stat(filepath.Join(dir, "got")); err != nil {
		t.Errorf("trap marker: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "sleepstatus")); err != nil || string(b) != "138\n" {
		t.Errorf("the group's sleep ended with %q, %v; want 138 (killed by the forwarded USR1)", b, err)
	}
	noChildren(t)
}

func TestRunBusy(t *testing.T) {
	done := make(chan struct{})
	started := make(chan struct{})
	go func() {
		defer close(done)
		runner.Run(context.Background(), runner.Options{
			Argv: sh("sleep 0.3"), OnStart: func(proc.ID) error { close(started); return nil },
		})
	}()
	<-started
	_, err := runner.Run(context.Background(), runner.Options{Argv: sh("exit 0")})
	if exit.Code(err, -1) != exit.NotRun {
		t.Errorf("second Run = %v; want ErrBusy with code 125", err)
	}
	<-done
	noChildren(t)
}
