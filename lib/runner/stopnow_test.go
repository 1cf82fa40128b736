//go:build linux

package runner_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/proc"
	"github.com/tether-sh/tether/lib/runner"
)

// TestRunStop: Options.Stop stops the command's group boundedly the moment
// it delivers, with the signal received first (zero or a closed channel:
// the schedule's own), and the result is the command's own status.
func TestRunStop(t *testing.T) {
	// The commands are sleep itself, not sh -c: sh -c catches INT until it
	// execs its last command, and an INT caught then is lost. The one
	// that ignores TERM says when its trap is set; Stop waits for that.
	sleep := []string{"sleep", "100"}
	tests := []struct {
		name    string
		argv    []string
		send    func(chan unix.Signal)
		code    int
		ignored unix.Signal // StopIgnored
	}{
		{"TERM", sleep, func(c chan unix.Signal) { c <- unix.SIGTERM }, 128 + 15, 0},
		{"INT replaces TERM", sleep, func(c chan unix.Signal) { c <- unix.SIGINT }, 128 + 2, 0},
		{"zero keeps TERM", sleep, func(c chan unix.Signal) { c <- 0 }, 128 + 15, 0},
		{"closed keeps TERM", sleep, func(c chan unix.Signal) { close(c) }, 128 + 15, 0},
		{"TERM ignored", sh(`trap '' TERM; sleep 100 & echo > "$READY"; wait; wait`), func(c chan unix.Signal) { c <- unix.SIGTERM }, 128 + 9, unix.SIGTERM},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A long grace costs nothing to a command that goes on the
			// first signal, and keeps a loaded machine from needing KILL.
			grace := 5 * time.Second
			if tt.ignored != 0 {
				grace = 200 * time.Millisecond
			}
			ready := filepath.Join(t.TempDir(), "ready")
			stopNow := make(chan unix.Signal, 1)
			start := time.Now()
			res, err := runner.Run(context.Background(), runner.Options{
				Argv: tt.argv, Grace: grace, Stop: stopNow,
				Env: append(os.Environ(), "READY="+ready),
				OnStart: func(proc.ID) error {
					if tt.ignored == 0 {
						tt.send(stopNow)
						return nil
					}
					go func() {
						for {
							if fi, err := os.Stat(ready); err == nil && fi.Size() > 0 {
								break
							}
							time.Sleep(time.Millisecond)
						}
						tt.send(stopNow)
					}()
					return nil
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Stopped || res.DeadlineHit || res.Canceled {
				t.Errorf("Run(%s) = stopped %v deadline %v canceled %v; want true false false", tt.name, res.Stopped, res.DeadlineHit, res.Canceled)
			}
			if res.Code() != tt.code || res.StopIgnored != tt.ignored {
				t.Errorf("Run(%s) = code %d ignored %v; want %d %v", tt.name, res.Code(), res.StopIgnored, tt.code, tt.ignored)
			}
			if d := time.Since(start); d > grace+5*time.Second {
				t.Errorf("Run(%s) took %v; want at most grace + KILL wait", tt.name, d)
			}
			noChildren(t)
		})
	}
}

// TestRunStopAfterExit: a Stop that comes only once the command has ended
// changes nothing: the command's own status, not stopped.
func TestRunStopAfterExit(t *testing.T) {
	stopNow := make(chan unix.Signal, 1)
	res, err := runner.Run(context.Background(), runner.Options{Argv: sh("exit 5"), Stop: stopNow})
	stopNow <- unix.SIGTERM
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped || res.Code() != 5 {
		t.Errorf("Run(exit 5) = stopped %v code %d; want false 5", res.Stopped, res.Code())
	}
}

// TestRunStopOnce: of the deadline and Stop, only the first stops the
// command; the deadline passing during Stop's stop does not make it 124.
func TestRunStopOnce(t *testing.T) {
	dir := t.TempDir()
	stopNow := make(chan unix.Signal, 1)
	// The command takes its time to go on TERM, longer than the deadline.
	script := `trap 'sleep 0.3; exit 9' TERM; echo >` + filepath.Join(dir, "ready") + `; while :; do sleep 0.05; done`
	go func() {
		for {
			if b, err := os.ReadFile(filepath.Join(dir, "ready")); err == nil && len(b) > 0 {
				stopNow <- unix.SIGTERM
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	res, err := runner.Run(context.Background(), runner.Options{
		Argv: sh(script), Grace: 5 * time.Second, Deadline: 150 * time.Millisecond, Stop: stopNow,
	})
	if err != nil {
		t.Fatal(err)
	}
	// Either may come first on a loaded machine; never both.
	if res.Stopped == res.DeadlineHit {
		t.Errorf("Run = stopped %v deadline %v; want exactly one", res.Stopped, res.DeadlineHit)
	}
	if res.Stopped && res.Code() != 9 {
		t.Errorf("Run stopped = code %d; want 9 (the trap's)", res.Code())
	}
	if res.DeadlineHit && res.Code() != exit.Deadline {
		t.Errorf("Run deadline = code %d; want 124", res.Code())
	}
	noChildren(t)
}
