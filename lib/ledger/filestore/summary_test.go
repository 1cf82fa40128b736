//go:build linux

package filestore

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/ledgertest"
)

// oldStore makes a store as the version before summaries left it: the
// same files, without the root's "summaries" file and the jobs'
// _summary files. It returns the records it holds.
func oldStore(t *testing.T, dir string) []ledger.Record {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	code := 0
	for i := 0; i < 12; i++ {
		job := []string{"a", "b", "c"}[i%3]
		r := mustClaim(t, s, job, ledger.ClaimOptions{})
		switch i % 4 {
		case 0:
			must(t)(s.Start(r.ID, nil))
			must(t)(s.Finish(r.ID, ledger.Completed, &code, ""))
		case 1:
			must(t)(s.Finish(r.ID, ledger.Failed, nil, "x"))
		case 2:
			must(t)(s.Start(r.ID, nil))
		}
	}
	recs, err := ledger.List(s, ledger.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, summariesMark)); err != nil {
		t.Fatal(err)
	}
	for _, j := range []string{"a", "b", "c"} {
		if err := os.Remove(filepath.Join(dir, jobsDir, j, summaryName)); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	return recs
}

// TestMigrateSummaries: a store without summaries gets them on its first
// Open, counting what it holds; a migration killed part way is redone.
func TestMigrateSummaries(t *testing.T) {
	t.Parallel()
	for _, killed := range []bool{false, true} {
		t.Run(fmt.Sprint("killed=", killed), func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "ledger")
			recs := oldStore(t, dir)
			if killed {
				cmd := helperCmd("open", dir)
				cmd.Env = append(cmd.Env, "LEDGER_TEST_CRASH_AT=migrate-job:2")
				err := cmd.Run()
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
					t.Fatalf("Open (crash at the second job) ended with %v; want SIGKILL", err)
				}
				if _, err := os.Stat(filepath.Join(dir, summariesMark)); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("after a killed migration, stat(summaries) = %v; want it missing", err)
				}
			}
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, err := os.Stat(filepath.Join(dir, summariesMark)); err != nil {
				t.Fatalf("after Open, stat(summaries) = %v", err)
			}
			checkSummaries(t, s, recs, true)
			// Counted once: a finish after the migration adds one.
			r := mustClaim(t, s, "a", ledger.ClaimOptions{})
			must(t)(s.Finish(r.ID, ledger.Failed, nil, "y"))
			s2, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer s2.Close()
			recs, _ = ledger.List(s2, ledger.Filter{})
			checkSummaries(t, s2, recs, true)
		})
	}
}

// TestSummariesCost: Summaries, Every and List of a live status read a bounded number of files
// however many executions a job has: no listing of exec/ or a job's
// directory.
func TestSummariesCost(t *testing.T) {
	s := newStore(t)
	code := 0
	for i := 0; i < 30; i++ {
		r := mustClaim(t, s, "j", ledger.ClaimOptions{})
		must(t)(s.Start(r.ID, nil))
		must(t)(s.Finish(r.ID, ledger.Completed, &code, ""))
	}
	live := mustClaim(t, s, "k", ledger.ClaimOptions{})
	must(t)(s.Start(live.ID, nil))
	var listed []string
	readNamesHook = func(dir string) { listed = append(listed, dir) }
	defer func() { readNamesHook = nil }()
	if _, err := s.Summaries("j"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim("j", ledger.ClaimOptions{Owner: ledgertest.Self(t), Every: time.Hour}); !errors.Is(err, ledger.ErrNotDue) {
		t.Fatalf("Claim(Every) = %v; want ErrNotDue", err)
	}
	if got, err := ledger.List(s, ledger.Filter{Status: ledger.Running}); err != nil || len(got) != 1 || got[0].ID != live.ID {
		t.Fatalf("List(running) = %v, %v; want %s", got, err, live.ID)
	}
	for _, d := range listed {
		if d != s.active.Path {
			t.Errorf("Summaries, Claim(Every) or List(running) listed %s; want only %s", d, s.active.Path)
		}
	}
}

// TestDamagedSummary: a summary that does not parse is reported by
// readers and rebuilt from the records by the next settle.
func TestDamagedSummary(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	for i := 0; i < 3; i++ {
		must(t)(s.Finish(mustClaim(t, s, "j", ledger.ClaimOptions{}).ID, ledger.Failed, nil, "x"))
	}
	if _, err := s.Recover(time.Hour); err != nil { // settles the three
		t.Fatal(err)
	}
	if err := os.WriteFile(s.path(jobsDir, "j", summaryName), []byte("garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Summaries("j"); !errors.Is(err, ledger.ErrCorrupt) {
		t.Fatalf("Summaries with a damaged summary = %v; want ErrCorrupt", err)
	}
	must(t)(s.Finish(mustClaim(t, s, "j", ledger.ClaimOptions{}).ID, ledger.Failed, nil, "x"))
	if _, err := s.Recover(time.Hour); err != nil {
		t.Fatal(err)
	}
	got, err := s.Summaries("j")
	if err != nil || got[0].Runs[ledger.Failed] != 4 {
		t.Fatalf("Summaries after the rebuild = %+v, %v; want 4 failed", got, err)
	}
}
