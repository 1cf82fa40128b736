//go:build linux

package runner_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/exit"

	"github.com/tether-sh/tether/lib/proc"
	"github.com/tether-sh/tether/lib/runner"
)

// TestRunGateHoldsCommand: while OnStart runs, the command's process
// exists under its final PID@START but has not run one instruction; it
// runs once OnStart returns nil, under that same identity, with the
// environment it was given. Both ways of holding it.
func TestRunGateHoldsCommand(t *testing.T) {
	for _, hold := range runner.Holds {
		t.Run(hold.Name, func(t *testing.T) {
			defer hold.Set()()
			dir := t.TempDir()
			marker := filepath.Join(dir, "ran")
			var held proc.ID
			var ranEarly bool
			res, err := runner.Run(context.Background(), runner.Options{
				Argv: sh(`echo $$ > ` + marker + `; echo "$TETHER_GATE_TEST,$TETHER_REEXEC" > ` + marker + `.env`),
				Env:  []string{"TETHER_GATE_TEST=set before the fork", "PATH=" + os.Getenv("PATH")},
				OnStart: func(id proc.ID) error {
					held = id
					_, err := os.Stat(marker)
					ranEarly = err == nil
					if st, err := proc.ReadStat(id.PID); err != nil || st.Start != id.Start || st.PGID != id.PID {
						t.Errorf("held child %v: stat %+v, %v; want that start and its own group", id, st, err)
					}
					return nil
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if ranEarly {
				t.Errorf("Run: the command ran before OnStart returned")
			}
			b, err := os.ReadFile(marker)
			if err != nil || string(b) != strconv.Itoa(held.PID)+"\n" {
				t.Errorf("command wrote %q, %v; want its PID %d (the held process exec'd it)", b, err, held.PID)
			}
			if b, err := os.ReadFile(marker + ".env"); err != nil || string(b) != "set before the fork,\n" {
				t.Errorf("command's environment: %q, %v; want Options.Env, without the gate's marker", b, err)
			}
			if res.Child != held || res.Code() != 0 {
				t.Errorf("Run = child %v code %d; want %v 0", res.Child, res.Code(), held)
			}
			noChildren(t)
		})
	}
}

// TestRunOnStartErrorRunsNothing: when the command cannot be recorded it
// never runs, Run says why with 125, and nothing of it is left.
func TestRunOnStartErrorRunsNothing(t *testing.T) {
	for _, hold := range runner.Holds {
		t.Run(hold.Name, func(t *testing.T) {
			defer hold.Set()()
			dir := t.TempDir()
			marker := filepath.Join(dir, "ran")
			why := errors.New("store is gone")
			_, err := runner.Run(context.Background(), runner.Options{
				Argv:    sh(`echo ran > ` + marker),
				OnStart: func(proc.ID) error { return why },
			})
			if !errors.Is(err, why) || exit.Code(err, -1) != exit.NotRun {
				t.Errorf("Run(OnStart fails) = %v (code %d); want %v with 125", err, exit.Code(err, -1), why)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("Run(OnStart fails): the command ran")
			}
			noChildren(t)
		})
	}
}

// TestRunStopWhileRecording: a stop signal that comes while OnStart
// records the held command ends the start with 128+N and the command never
// runs, but only once OnStart has answered, told by HeldStop to give up:
// what OnStart committed meanwhile is known to the caller when Run
// returns. USR1, sent first, is no stop: the start ends of TERM (143).
func TestRunStopWhileRecording(t *testing.T) {
	for _, hold := range runner.Holds {
		t.Run(hold.Name, func(t *testing.T) {
			defer hold.Set()()
			marker := filepath.Join(t.TempDir(), "ran")
			sigs := make(chan os.Signal, 2)
			heldStop := make(chan struct{})
			var committed atomic.Bool
			_, err := runner.Run(context.Background(), runner.Options{
				Argv:     sh(`echo ran > ` + marker),
				Signals:  sigs,
				HeldStop: heldStop,
				OnStart: func(proc.ID) error {
					sigs <- unix.SIGUSR1
					sigs <- unix.SIGTERM
					select {
					case <-heldStop:
					case <-time.After(10 * time.Second):
						return errors.New("HeldStop was not closed")
					}
					// A commit already under way finishes.
					time.Sleep(20 * time.Millisecond)
					committed.Store(true)
					return nil
				},
			})
			if !errors.Is(err, runner.ErrStoppedHeld) || exit.Code(err, -1) != 128+15 {
				t.Errorf("Run(TERM while recording) = %v (code %d); want ErrStoppedHeld with 143", err, exit.Code(err, -1))
			}
			if !committed.Load() {
				t.Errorf("Run(TERM while recording) returned before OnStart answered")
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("Run(TERM while recording): the command ran")
			}
			noChildren(t)
		})
	}
}

// TestRunStopReadyWithCommit: a stop signal that is already waiting when
// the record's commit returns (it came during the wait for the store's
// lock, and its delivery and the lock's release raced) ends the start:
// the command is never released, whichever of the two the runner looks
// at first. Each round hands the TERM over before OnStart answers.
func TestRunStopReadyWithCommit(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	for i := range 30 {
		sigs := make(chan os.Signal, 2)
		_, err := runner.Run(context.Background(), runner.Options{
			Argv:     sh(`echo ran > ` + marker),
			Signals:  sigs,
			HeldStop: make(chan struct{}),
			OnStart: func(proc.ID) error {
				sigs <- unix.SIGTERM
				return nil
			},
		})
		if !errors.Is(err, runner.ErrStoppedHeld) || exit.Code(err, -1) != 128+15 {
			t.Fatalf("round %d: Run(TERM ready with the commit) = %v (code %d); want ErrStoppedHeld with 143", i, err, exit.Code(err, -1))
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("round %d: Run(TERM ready with the commit): the command ran", i)
		}
	}
	noChildren(t)
}

// TestRunGateExecErrors: a command that cannot be executed fails with a
// shell's status: traced, before it is recorded (its exec failed in the
// fork); behind the gate, after.
func TestRunGateExecErrors(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("not a program\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		argv     []string
		code     int
		recorded map[string]bool // by hold
	}{
		{"missing path", []string{filepath.Join(dir, "missing")}, exit.NotFound, map[string]bool{"traced": true, "gate": true}}, // not stat-able: held at the gate
		{"not executable", []string{plain}, exit.NoExec, map[string]bool{"gate": true}},
		{"not on PATH", []string{"tether-no-such-command"}, exit.NotFound, nil},
	}
	for _, hold := range runner.Holds {
		restore := hold.Set()
		for _, tt := range tests {
			t.Run(hold.Name+"/"+tt.name, func(t *testing.T) {
				recorded := false
				_, err := runner.Run(context.Background(), runner.Options{
					Argv:    tt.argv,
					OnStart: func(proc.ID) error { recorded = true; return nil },
				})
				if got := exit.Code(err, -1); got != tt.code || recorded != tt.recorded[hold.Name] {
					t.Errorf("Run(%v) = %v (code %d), recorded %v; want code %d, recorded %v", tt.argv, err, got, recorded, tt.code, tt.recorded[hold.Name])
				}
				noChildren(t)
			})
		}
		restore()
	}
}

// TestTraceable: a program whose privileges a traced exec would drop goes
// through the gate.
func TestTraceable(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		mode os.FileMode
		want bool
	}{
		{0o755, true},
		{0o755 | os.ModeSetuid, false},
		{0o755 | os.ModeSetgid, false},
	}
	for _, tt := range tests {
		path := filepath.Join(dir, tt.mode.String())
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, tt.mode); err != nil {
			t.Fatal(err)
		}
		if got := runner.Traceable(path); got != tt.want {
			t.Errorf("traceable(%v) = %v; want %v", tt.mode, got, tt.want)
		}
	}
	if runner.Traceable(filepath.Join(dir, "missing")) {
		t.Errorf("traceable(missing) = true; want false")
	}
}
