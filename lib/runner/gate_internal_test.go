//go:build linux

package runner

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tether-sh/tether/lib/internal/gate"
)

// TestGateRunnerGone: a gate whose runner goes away before releasing it
// (its end of the pipe closes, as at the runner's death) runs nothing and
// exits 125.
func TestGateRunnerGone(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	cmd, g, err := gateCommand(Options{Argv: []string{"sh", "-c", "echo ran > " + marker}}, "/bin/sh")
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
