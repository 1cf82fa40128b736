package runner_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/tether-sh/tether/lib/spec"

	"github.com/tether-sh/tether/lib/proc"
	"github.com/tether-sh/tether/lib/runner"
)

// TestRunGateHoldsCommand: while OnStart runs, the command's process
// exists under its final PID@START but has not run one instruction; it
// runs once OnStart returns nil, under that same identity.
func TestRunGateHoldsCommand(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	var held proc.ID
	var ranEarly bool
	res, err := runner.Run(context.Background(), runner.Options{
		Argv: sh(`echo $$ > ` + marker + `; echo "$TETHER_GATE_TEST,$HOME" > ` + marker + `.env`),
		OnStart: func(id proc.ID) ([]string, error) {
			held = id
			_, err := os.Stat(marker)
			ranEarly = err == nil
			if st, err := proc.ReadStat(id.PID); err != nil || st.Start != id.Start || st.PGID != id.PID {
				t.Errorf("held child %v: stat %+v, %v; want that start and its own group", id, st, err)
			}
			return []string{"TETHER_GATE_TEST=known at release", "HOME=/replaced"}, nil
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
	if b, err := os.ReadFile(marker + ".env"); err != nil || string(b) != "known at release,/replaced\n" {
		t.Errorf("command's environment: %q, %v; want OnStart's variables added, replacing", b, err)
	}
	if res.Child != held || res.Code() != 0 {
		t.Errorf("Run = child %v code %d; want %v 0", res.Child, res.Code(), held)
	}
	noChildren(t)
}

// TestRunOnStartErrorRunsNothing: when the command cannot be recorded it
// never runs, Run says why with 125, and nothing of it is left.
func TestRunOnStartErrorRunsNothing(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	why := errors.New("store is gone")
	_, err := runner.Run(context.Background(), runner.Options{
		Argv:    sh(`echo ran > ` + marker),
		OnStart: func(proc.ID) ([]string, error) { return nil, why },
	})
	if !errors.Is(err, why) || spec.Code(err, -1) != spec.ExitNotRun {
		t.Errorf("Run(OnStart fails) = %v (code %d); want %v with 125", err, spec.Code(err, -1), why)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("Run(OnStart fails): the command ran")
	}
	noChildren(t)
}

// TestRunGateExecErrors: a command that cannot be executed fails behind
// the gate with a shell's status, after it was recorded.
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
		recorded bool
	}{
		{"missing path", []string{filepath.Join(dir, "missing")}, spec.ExitNotFound, true},
		{"not executable", []string{plain}, spec.ExitNoExec, true},
		{"not on PATH", []string{"tether-no-such-command"}, spec.ExitNotFound, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recorded := false
			_, err := runner.Run(context.Background(), runner.Options{
				Argv:    tt.argv,
				OnStart: func(proc.ID) ([]string, error) { recorded = true; return nil, nil },
			})
			if got := spec.Code(err, -1); got != tt.code || recorded != tt.recorded {
				t.Errorf("Run(%v) = %v (code %d), recorded %v; want code %d, recorded %v", tt.argv, err, got, recorded, tt.code, tt.recorded)
			}
			noChildren(t)
		})
	}
}
