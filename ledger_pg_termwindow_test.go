//go:build linux

package tether_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tether-sh/tether/internal/pgtest"
)

// TestTermWindowPostgres: a TERM sent at any moment of a PostgreSQL
// ledger run's start is never lost on the way to tether-pg, and CMD never
// runs after the tool stopped. ledger decides which program serves the
// store before it catches any signal (the router), so that a TERM before
// the exec kills it with nothing run and one after is tether-pg's: it
// stops the run before CMD runs, or forwards it to CMD. The TERMs are
// spread over the first 0-40 ms (stand-in) or 0-100 ms (real) of 400 runs each, with a stand-in
// tether-pg (which runs CMD at once: no database, only the hand-off) and
// with the real one (spread over longer when a run takes longer to start
// here). A run is judged by what it left: CMD writes a file
// first, then sleeps 5 s; a run that exits 0 ignored the TERM, one whose
// file appears only after it exited ran CMD after it stopped. (A TERM
// before the tool catches any is a death by TERM, as for any program.)
func TestTermWindowPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("400 runs twice")
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/", "./cmd/ledger", "./cmd/adopt", "./cmd/tether-pg")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Run("stand-in", func(t *testing.T) {
		dir := t.TempDir()
		// A tether-pg that runs CMD at once, as the real one does once
		// its run is recorded: sh, which TERM kills, until CMD's exec.
		stand := filepath.Join(dir, "bin")
		must0(t, os.Mkdir(stand, 0o755))
		must0(t, os.WriteFile(filepath.Join(stand, "tether-pg"), []byte("#!/bin/sh\nwhile [ $# -gt 0 ] && [ \"$1\" != -- ]; do shift; done\nshift\nexec \"$@\"\n"), 0o755))
		for _, tool := range []string{"ledger", "adopt"} {
			must0(t, os.Link(filepath.Join(bin, tool), filepath.Join(stand, tool)))
		}
		termWindow(t, filepath.Join(stand, "ledger"), "postgres:///none?host=/nonexistent", dir, 400, 40*time.Millisecond)
	})
	t.Run("tether-pg", func(t *testing.T) {
		srv := pgtest.Start(t)
		url := srv.NewDB(t)
		termWindow(t, filepath.Join(bin, "ledger"), url, t.TempDir(), 400, 100*time.Millisecond)
	})
}

// termWindow runs n ledger runs on store, sending each a TERM after
// i*spread/n, and judges them (see TestTermWindowPostgres). The spread is
// at least 1.5 times as long as a run takes to start CMD here and now
// (measured first), so that a loaded machine's slower start is covered
// to its end.
func termWindow(t *testing.T, ledger, store, dir string, n int, spread time.Duration) {
	startTime(t, ledger, store, dir, "cold") // a new database's schema is made by the first claim
	spread = max(spread, startTime(t, ledger, store, dir, "warm")*3/2)
	t.Logf("TERMs spread over %v", spread)
	type outcome struct {
		code      int
		signaled  bool
		ranAtExit bool
		stderr    string
	}
	outcomes := make([]outcome, n)
	marks := func(i int) string { return filepath.Join(dir, fmt.Sprintf("ran.%d", i)) }
	var wg sync.WaitGroup
	work := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range work {
				var stderr bytes.Buffer
				cmd := exec.Command(ledger, "--ledger", store, "run", fmt.Sprintf("w%d", i), "--grace", "1s", "--", "sh", "-c", `: >"$0"; exec sleep 5`, marks(i))
				cmd.Env = append(os.Environ(), "TETHER_LEDGER=", "TETHER_HANDOFF_LEDGER=")
				cmd.Stderr = &stderr
				if err := cmd.Start(); err != nil {
					t.Error(err)
					continue
				}
				time.Sleep(time.Duration(i) * spread / time.Duration(n))
				cmd.Process.Signal(syscall.SIGTERM)
				err := cmd.Wait()
				_, statErr := os.Stat(marks(i))
				o := outcome{ranAtExit: statErr == nil, stderr: stderr.String()}
				var ee *exec.ExitError
				switch {
				case errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled():
					o.signaled = true
				case errors.As(err, &ee):
					o.code = ee.ExitCode()
				case err != nil:
					t.Error(err)
				}
				outcomes[i] = o
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	// A payload still held when its tool exited would show by now.
	time.Sleep(300 * time.Millisecond)
	var killed, stopped, forwarded int
	for i, o := range outcomes {
		_, statErr := os.Stat(marks(i))
		ranLate := statErr == nil && !o.ranAtExit
		switch {
		case ranLate:
			t.Errorf("run %d (TERM after %v): CMD ran after ledger exited (exit %d, signaled %v): %s", i, time.Duration(i)*spread/time.Duration(n), o.code, o.signaled, o.stderr)
		case o.signaled && !o.ranAtExit:
			killed++
		case o.signaled, o.code == 143 && o.ranAtExit:
			// The stand-in is CMD once it execs it: the TERM is CMD's.
			forwarded++
		case o.code == 143 && !o.ranAtExit:
			stopped++
		default:
			t.Errorf("run %d (TERM after %v): exit %d, CMD ran: %v; want 143 or death by TERM (the TERM ignored?): %s", i, time.Duration(i)*spread/time.Duration(n), o.code, o.ranAtExit, strings.TrimSpace(o.stderr))
		}
	}
	t.Logf("%d runs: %d killed before catching, %d stopped before CMD ran, %d reached CMD", n, killed, stopped, forwarded)
}

// startTime is how long a ledger run on store takes to start its CMD.
func startTime(t *testing.T, ledger, store, dir, name string) time.Duration {
	mark := filepath.Join(dir, "started."+name)
	cmd := exec.Command(ledger, "--ledger", store, "run", "calibrate", "--grace", "1s", "--", "sh", "-c", `: >"$0"; exec sleep 5`, mark)
	cmd.Env = append(os.Environ(), "TETHER_LEDGER=", "TETHER_HANDOFF_LEDGER=")
	began := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Signal(syscall.SIGTERM)
	for time.Since(began) < 30*time.Second {
		if _, err := os.Stat(mark); err == nil {
			return time.Since(began)
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("ledger run did not start CMD within 30s")
	return 0
}

func must0(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
