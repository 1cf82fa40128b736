//go:build linux

package filestore

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/ledgertest"
)

// oldStore writes a store as the format before job logs left it: each
// record a file exec/ID, a membership marker jobs/JOB/ID each, _latest,
// an active/ID.JOB marker for each live execution and for one finished
// but not yet counted, and job a's summary counting 5 completed
// executions since pruned and listing what it counted. With summaries
// false, it is a store of the version before summaries too (no
// "summaries" file, no _summary). It returns the records it holds.
func oldStore(t *testing.T, dir string, summaries bool) []ledger.Record {
	t.Helper()
	for _, d := range []string{"", execDir, jobsDir, activeDir, "jobs/a", "jobs/b", "jobs/c"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(lockName, "")
	owner := ledgertest.Self(t)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	code := 0
	var recs []ledger.Record
	counted := map[string][]string{}
	for i := 0; i < 12; i++ {
		job := []string{"a", "b", "c"}[i%3]
		r := ledger.Record{ID: ledger.NewID(at.Add(time.Duration(i)*time.Second), job), Job: job, Status: ledger.Claimed, Owner: owner, ClaimedAt: at.Add(time.Duration(i) * time.Second)}
		switch i % 4 {
		case 0:
			r.Status, r.StartedAt, r.FinishedAt, r.ExitCode = ledger.Completed, r.ClaimedAt, r.ClaimedAt.Add(time.Millisecond), &code
		case 1:
			r.Status, r.FinishedAt, r.Error = ledger.Failed, r.ClaimedAt.Add(time.Millisecond), "x"
		case 2:
			r.Status, r.StartedAt = ledger.Running, r.ClaimedAt
		}
		write(filepath.Join(execDir, r.ID), string(r.Encode()))
		write(filepath.Join(jobsDir, job, r.ID), "")
		write(filepath.Join(jobsDir, job, legacyLatest), r.ID+"\n")
		if !r.Status.Terminal() || i == 9 { // 9: finished, not yet counted
			write(filepath.Join(activeDir, r.ID+"."+job), "")
		} else {
			counted[job] = append(counted[job], r.ID)
		}
		recs = append(recs, r)
	}
	if summaries {
		write(summariesMark, "")
		for _, job := range []string{"a", "b", "c"} {
			runs := map[ledger.Status]int{}
			for _, r := range recs {
				if r.Job == job && r.Status.Terminal() && slices.Contains(counted[job], r.ID) {
					runs[r.Status]++
				}
			}
			if job == "a" {
				runs[ledger.Completed] += 5
			}
			line := "runs"
			for _, st := range ledger.Statuses {
				if runs[st] > 0 {
					line += fmt.Sprintf(" %s %d", st, runs[st])
				}
			}
			write(filepath.Join(jobsDir, job, summaryName), summaryMagic1+"\n"+line+"\ncounted "+strings.Join(counted[job], " ")+"\n")
		}
	}
	return recs
}

// TestMigrateLogs: a store of the format before job logs (and one from
// before summaries) is migrated by its first Open: every record, every
// count (the pruned ones of the old summary too, the uncounted finish
// once), Latest, and no old marker left; a migration killed part way is
// redone.
func TestMigrateLogs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		summaries bool
		kill      string
	}{{true, ""}, {true, "migrate-job:2"}, {true, "migrate-linked:1"}, {false, ""}} {
		t.Run(fmt.Sprint("summaries=", tc.summaries, ",kill=", tc.kill), func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "ledger")
			recs := oldStore(t, dir, tc.summaries)
			if tc.kill != "" {
				cmd := helperCmd("open", dir)
				cmd.Env = append(cmd.Env, "LEDGER_TEST_CRASH_AT="+tc.kill)
				err := cmd.Run()
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
					t.Fatalf("Open (crash at %s) ended with %v; want SIGKILL", tc.kill, err)
				}
				if _, err := os.Stat(filepath.Join(dir, logsMark)); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("after a killed migration, stat(logs) = %v; want it missing", err)
				}
			}
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			got, err := ledger.List(s, ledger.Filter{})
			if err != nil || len(got) != len(recs) {
				t.Fatalf("List after migration = %d records, %v; want %d", len(got), err, len(recs))
			}
			for i, r := range recs {
				if g, err := s.Get(r.ID); err != nil || !reflect.DeepEqual(g, r) || got[i].ID != r.ID {
					t.Errorf("Get(%s) after migration = %+v, %v; want %+v", r.ID, g, err, r)
				}
			}
			for _, job := range []string{"a", "b", "c"} {
				var last ledger.Record
				for _, r := range recs {
					if r.Job == job {
						last = r
					}
				}
				if l, err := s.Latest(job); err != nil || l.ID != last.ID {
					t.Errorf("Latest(%s) = %s, %v; want %s", job, l.ID, err, last.ID)
				}
				names, _ := os.ReadDir(filepath.Join(dir, jobsDir, job))
				for _, n := range names {
					if n.Name() != logName && n.Name() != summaryName {
						t.Errorf("jobs/%s/%s left after migration", job, n.Name())
					}
				}
			}
			sums, err := s.Summaries("a")
			if err != nil {
				t.Fatal(err)
			}
			want := map[ledger.Status]uint64{ledger.Completed: 1, ledger.Failed: 1}
			if tc.summaries {
				want[ledger.Completed] += 5 // pruned, counted by the old summary
			}
			if !reflect.DeepEqual(sums[0].Runs, want) || sums[0].Live != 2 {
				t.Errorf("Summaries(a) after migration = %v live %d; want %v live 2", sums[0].Runs, sums[0].Live, want)
			}
			if !tc.summaries {
				checkSummaries(t, s, recs, true)
			}
			// Counted once: a finish after the migration adds one.
			r := mustClaim(t, s, "a", ledger.ClaimOptions{})
			must(t)(s.Finish(r.ID, ledger.Failed, nil, "y"))
			want[ledger.Failed]++
			if sums, _ := s.Summaries("a"); !reflect.DeepEqual(sums[0].Runs, want) {
				t.Errorf("Summaries(a) after a finish = %v; want %v", sums[0].Runs, want)
			}
		})
	}
}

// TestSummariesCost: Summaries, Every and List of a live status read a
// bounded number of files however many executions a job has: no listing
// of exec/ or a job's directory, no walk of a job's whole log.
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
	walkHook = readNamesHook
	defer func() { readNamesHook, walkHook = nil, nil }()
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

// TestDamagedSummary: a cached summary that does not parse is recounted
// from the log by readers, and rewritten by the next settle.
func TestDamagedSummary(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	for i := 0; i < 3; i++ {
		must(t)(s.Finish(mustClaim(t, s, "j", ledger.ClaimOptions{}).ID, ledger.Failed, nil, "x"))
	}
	cache := s.path(jobsDir, "j", summaryName)
	if _, err := os.Stat(cache); err != nil {
		t.Fatalf("no cached summary after finishes: %v", err)
	}
	if err := os.WriteFile(cache, []byte("garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Summaries("j"); err != nil || got[0].Runs[ledger.Failed] != 3 {
		t.Fatalf("Summaries with a damaged cache = %+v, %v; want 3 failed", got, err)
	}
	must(t)(s.Finish(mustClaim(t, s, "j", ledger.ClaimOptions{}).ID, ledger.Failed, nil, "x"))
	if _, _, _, ok := readCache(s.jobDirForTest(t, "j"), "j"); !ok {
		t.Errorf("the cache is still damaged after a finish")
	}
	got, err := s.Summaries("j")
	if err != nil || got[0].Runs[ledger.Failed] != 4 {
		t.Fatalf("Summaries after the rewrite = %+v, %v; want 4 failed", got, err)
	}
}

// TestUnmigratedReader: a store of the format before job logs that its
// reader may not migrate (a member of the owner's group) answers Get from
// its record files, and says, for what it cannot answer, that its owner
// must write it once. Needs root, to give the store to another user.
func TestUnmigratedReader(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the store to another user")
	}
	dir := filepath.Join(t.TempDir(), "ledger")
	recs := oldStore(t, dir, true)
	if out, err := exec.Command("sh", "-c", "chown -R 65534:0 "+dir+" && chmod -R g+rX "+dir).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
	s, err := OpenExisting(dir)
	if err != nil {
		t.Fatalf("OpenExisting(old store of another user) = %v", err)
	}
	defer s.Close()
	for _, r := range recs {
		if g, err := s.Get(r.ID); err != nil || !reflect.DeepEqual(g, r) {
			t.Errorf("Get(%s) = %+v, %v; want %+v", r.ID, g, err, r)
		}
	}
	_, errList := ledger.List(s, ledger.Filter{})
	_, errLatest := s.Latest("a")
	_, errSums := s.Summaries()
	for what, err := range map[string]error{"List": errList, "Latest": errLatest, "Summaries": errSums} {
		if !errors.Is(err, ledger.ErrUnsafeStore) || !strings.Contains(err.Error(), "older tether") {
			t.Errorf("%s of an unmigrated store = %v; want ErrUnsafeStore saying the owner must write it", what, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, logsMark)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a reader migrated the store: stat(logs) = %v", err)
	}
}
