//go:build linux

package tether_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLedgerPostgresPause: a ledger run that is paused (SIGSTOP of the
// runner alone, its payload running on) under a 3 s lease.
//
// Woken 2 s later, past the moment it would stop its payload but inside
// its lease, it renews first: the healthy payload runs to its end,
// completed, exit 0 (it used to be stopped at once: failed 143).
//
// Woken once its lease ran out and another host recovered the execution
// (its owner made another host's, so that recover judges it by its
// lease), it finds itself replaced at its first renewal: it stops its
// payload at once, keeps its result as late, never as the execution's,
// and exits 3.
func TestLedgerPostgresPause(t *testing.T) {
	t.Parallel()
	srv := sharedPostgres(t)
	start := func(t *testing.T, dir, dsn string, args ...string) (*exec.Cmd, *bytes.Buffer) {
		t.Helper()
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		c := exec.Command(exe, append([]string{"--ledger", dsn}, args...)...)
		c.Args[0] = "ledger"
		c.Dir = dir
		c.Env = append(os.Environ(), "HOME="+dir, "XDG_STATE_HOME="+dir+"/state", "TETHER_LEDGER=")
		var stderr bytes.Buffer
		c.Stderr = &stderr
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			c.Process.Signal(syscall.SIGCONT)
			c.Process.Kill()
			c.Wait()
		})
		return c, &stderr
	}
	// payloadPID waits for the payload to write its PID to dir/started.
	payloadPID := func(t *testing.T, dir string) int {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			b, err := os.ReadFile(filepath.Join(dir, "started"))
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil && pid > 0 {
				return pid
			}
		}
		t.Fatal("the payload did not start within 30s")
		return 0
	}
	ledger := func(t *testing.T, dir, dsn string, args ...string) string {
		t.Helper()
		out, code, err := runTool(dir, "ledger", append([]string{"--ledger", dsn}, args...)...)
		if err != nil || code != 0 {
			t.Fatalf("ledger %s: exit %d, %v: %s", strings.Join(args, " "), code, err, out)
		}
		return strings.TrimSpace(out)
	}
	exitCode := func(err error) int {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			return -1
		}
		return 0
	}

	t.Run("inside its lease", func(t *testing.T) {
		t.Parallel()
		dir, dsn := t.TempDir(), must(srv.CreateDB())
		run, stderr := start(t, dir, dsn, "run", "--lease", "3s", "--grace", "1s", "paused", "--",
			"sh", "-c", `echo $$ > started; i=0; while [ $i -lt 35 ]; do sleep 0.1; i=$((i+1)); done; echo done > finished`)
		payloadPID(t, dir)
		run.Process.Signal(syscall.SIGSTOP)
		time.Sleep(2 * time.Second) // the pause under test
		run.Process.Signal(syscall.SIGCONT)
		if code := exitCode(run.Wait()); code != 0 {
			t.Errorf("ledger run paused 2s under a 3s lease: exit %d; want 0 (its payload healthy)\n%s", code, stderr)
		}
		if status := ledger(t, dir, dsn, "latest", "paused", "--field", "status"); status != "completed" {
			t.Errorf("the paused run's record is %s; want completed\n%s", status, stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, "finished")); err != nil {
			t.Errorf("the payload did not run to its end: %v", err)
		}
	})

	t.Run("replaced", func(t *testing.T) {
		t.Parallel()
		db := must(srv.CreateDBName())
		dir, dsn := t.TempDir(), srv.DSN(db)
		run, stderr := start(t, dir, dsn, "run", "--lease", "3s", "--grace", "1s", "taken", "--",
			"sh", "-c", `echo $$ > started; exec sleep 60`)
		payload := payloadPID(t, dir)
		run.Process.Signal(syscall.SIGSTOP)
		// As if it ran on host-b: recover here judges it by its lease.
		if _, err := srv.Psql(db, `UPDATE tether.executions SET owner_host = 'host-b', owner_boot_id = '00000000-0000-4000-8000-00000000000b'`); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if ledger(t, dir, dsn, "recover") == "1" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("recover did not end the paused run within 30s of its 3s lease")
			}
		}
		ledger(t, dir, dsn, "claim", "taken")
		woke := time.Now()
		run.Process.Signal(syscall.SIGCONT)
		code := exitCode(run.Wait())
		if code != 3 {
			t.Errorf("ledger run woken replaced: exit %d; want 3\n%s", code, stderr)
		}
		if took := time.Since(woke); took > 10*time.Second {
			t.Errorf("ledger run woken replaced took %v to stop its payload; want at once (grace 1s)", took)
		}
		if !strings.Contains(stderr.String(), "is no longer this runner's") {
			t.Errorf("ledger run woken replaced said:\n%s\nwant that the execution is no longer its", stderr)
		}
		if err := syscall.Kill(payload, 0); err != syscall.ESRCH {
			t.Errorf("the replaced run's payload %d: kill 0 = %v; want gone", payload, err)
		}
		id := ledger(t, dir, dsn, "list", "--job", "taken", "--field", "id")
		first, _, _ := strings.Cut(id, "\n")
		for field, want := range map[string]string{"status": "unknown", "late.status": "failed", "late.exit_code": "143"} {
			if got := ledger(t, dir, dsn, "show", first, "--field", field); got != want {
				t.Errorf("the replaced run's %s = %q; want %q", field, got, want)
			}
		}
	})
}
