//go:build linux

package runner

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tether-sh/tether/lib/internal/gate"
	"github.com/tether-sh/tether/lib/internal/reexec/marker"
)

// TestGateRunnerGone: a gate whose runner goes away before releasing it
// (its end of the pipe closes, as at the runner's death) runs nothing and
// exits 125.
func TestGateRunnerGone(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	cmd, g, err := gateCommand(Options{Argv: []string{"sh", "-c", "echo ran > " + marker}}, "/bin/sh", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for _, f := range cmd.ExtraFiles {
		f.Close()
	}
	g.shut()
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != gate.Status {
		t.Errorf("gate with its runner gone = %v; want exit %d", err, gate.Status)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("gate with its runner gone ran the command")
	}
}

// TestGateCommandMarks: the gate is started as the re-exec protocol's
// "gate" role, marked once in its environment and in its first argument,
// whatever marker the caller's environment carried.
func TestGateCommandMarks(t *testing.T) {
	env := []string{"A=1", marker.Env + "=thaw", "B=2"}
	cmd, g, err := gateCommand(Options{Argv: []string{"sh", "-c", "true"}, Env: env}, "/bin/sh", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.shut()
	for _, f := range cmd.ExtraFiles {
		defer f.Close()
	}
	if want := []string{"A=1", "B=2", marker.Env + "=" + gate.Role}; !slices.Equal(cmd.Env, want) {
		t.Errorf("gateCommand(Env %q).Env = %q; want %q", env, cmd.Env, want)
	}
	if want := []string{marker.Flag(gate.Role), "-", "/bin/sh", "sh", "-c", "true"}; !slices.Equal(cmd.Args[1:], want) {
		t.Errorf("gateCommand().Args[1:] = %q; want %q", cmd.Args[1:], want)
	}
	if cmd.Path != "/proc/self/exe" {
		t.Errorf("gateCommand().Path = %q; want /proc/self/exe", cmd.Path)
	}
	if len(cmd.ExtraFiles) != 2 {
		t.Errorf("gateCommand() has %d extra files; want 2 (release and error pipes)", len(cmd.ExtraFiles))
	}
	if !slices.Equal(env, []string{"A=1", marker.Env + "=thaw", "B=2"}) {
		t.Errorf("gateCommand changed its caller's Env to %q", env)
	}
}
