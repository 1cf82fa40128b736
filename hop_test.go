package tether_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether-sh/tether/internal/pgtest"
)

// TestPostgresHandOff: the installed ledger and adopt do not link the
// PostgreSQL driver; given a postgres:// store they become tether-pg,
// found next to them, running the same command (a spawn's worker too),
// and without tether-pg they say so in one line with exit 3.
func TestPostgresHandOff(t *testing.T) {
	srv := pgtest.Start(t)
	url := srv.NewDB(t)
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/", "./cmd/ledger", "./cmd/adopt", "./cmd/tether-pg")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ledger := func(args ...string) (string, int) {
		cmd := exec.Command(filepath.Join(bin, "ledger"), append([]string{"--ledger", url}, args...)...)
		cmd.Env = append(os.Environ(), "TETHER_LEDGER=")
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}

	if out, code := ledger("run", "hop", "--", "sh", "-c", `echo "id=$TETHER_EXECUTION"`); code != 0 || !strings.HasPrefix(out, "id=") {
		t.Fatalf("ledger run through tether-pg = %q, exit %d; want id=…, 0", out, code)
	}
	if out, code := ledger("latest", "hop", "--field", "status"); code != 0 || out != "completed\n" {
		t.Errorf("ledger latest = %q, exit %d; want completed, 0", out, code)
	}
	// spawn's worker is adopt, which hands off too
	if out, code := ledger("spawn", "--scope", "never", "--wait", "hopspawn", "--", "sh", "-c", "exit 4"); code != 4 {
		t.Errorf("ledger spawn --wait through tether-pg = %q, exit %d; want 4", out, code)
	}
	if out, code := ledger("latest", "hopspawn", "--field", "exit_code"); code != 0 || out != "4\n" {
		t.Errorf("ledger latest hopspawn = %q, exit %d; want 4, 0", out, code)
	}

	if err := os.Remove(filepath.Join(bin, "tether-pg")); err != nil {
		t.Fatal(err)
	}
	out, code := ledger("latest", "hop")
	if code != 3 || strings.Count(out, "\n") != 1 || !strings.Contains(out, "served by "+filepath.Join(bin, "tether-pg")) {
		t.Errorf("ledger without tether-pg = %q, exit %d; want one line naming it, 3", out, code)
	}
}
