//go:build linux

package filestore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/filestore/joblog"
	"github.com/tether-sh/tether/lib/ledger/filestore/wire"
	"github.com/tether-sh/tether/lib/ledger/ledgertest"
)

// TestOldFormatRefused: a store of format 1 (a record per file in exec/,
// no "logs" file), which no release wrote, is refused by Open and
// OpenExisting with one line naming its format, and left as it was.
func TestOldFormatRefused(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "ledger")
	for _, d := range []string{"", oldExecDir, jobsDir, activeDir, "jobs/a"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	r := ledger.Record{ID: "0dn9r00hz2tnv-7j8mrd", Job: "a", Status: ledger.Claimed, Owner: ledgertest.Self(t), ClaimedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	for name, data := range map[string]string{lockName: "", "exec/" + r.ID: string(wire.Encode(r)), "jobs/a/" + r.ID: ""} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for what, open := range map[string]func(string) (*Store, error){
		"Open":         func(d string) (*Store, error) { return Open(d) },
		"OpenExisting": func(d string) (*Store, error) { return OpenExisting(d) },
	} {
		s, err := open(dir)
		if err == nil {
			s.Close()
		}
		want := dir + ": format 1 is not this version's"
		if !errors.Is(err, ledger.ErrUnsafeStore) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s(format 1 store) = %v; want ErrUnsafeStore saying %q", what, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, logsMark)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused store was changed: stat(logs) = %v", err)
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
	joblog.WalkHook = readNamesHook
	defer func() { readNamesHook, joblog.WalkHook = nil, nil }()
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

// TestSummaryClockStep: a run recorded while the clock was 2 h ahead,
// then, the clock stepped back, a run that failed. The summary's last
// finished is the failure (the last in the log), not the success whose
// time is later; and --every 1h is not held by a success from the future.
func TestSummaryClockStep(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return now.Add(2 * time.Hour) }
	owner := ledgertest.Self(t)
	code, one := 0, 1
	ahead, err := s.Claim("j", ledger.ClaimOptions{Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start(ahead.ID, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Finish(ahead.ID, ledger.Completed, &code, ""); err != nil {
		t.Fatal(err)
	}
	s.now = func() time.Time { return now }
	back, err := s.Claim("j", ledger.ClaimOptions{Owner: owner, Every: time.Hour})
	if err != nil {
		t.Fatalf("Claim(Every: 1h) after a success 2h in the future = %v; want the claim", err)
	}
	if _, err := s.Finish(back.ID, ledger.Failed, &one, ""); err != nil {
		t.Fatal(err)
	}
	sums, err := s.Summaries("j")
	if err != nil {
		t.Fatal(err)
	}
	if got := sums[0].LastFinished.ID; got != back.ID {
		t.Errorf("LastFinished = %s; want %s (failed, the last in the log), not %s (its time 2h ahead)", got, back.ID, ahead.ID)
	}
	if got := sums[0].LastSuccess.ID; got != ahead.ID {
		t.Errorf("LastSuccess = %s; want %s", got, ahead.ID)
	}
	// the same once prune has copied both into the log's next generation
	if _, err := s.Prune(ledger.PruneOptions{Keep: 5}, nil); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(s.dir, jobsDir, "j", summaryName))
	if sums, err = s.Summaries("j"); err != nil {
		t.Fatal(err)
	}
	if got := sums[0].LastFinished.ID; got != back.ID {
		t.Errorf("after a prune: LastFinished = %s; want %s", got, back.ID)
	}
}

// TestSummaryMended: a cached summary lost is counted once: the first
// reader that finds none (the store's owner, the lock free) caches it, so
// the next reads count only from there.
func TestSummaryMended(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	code := 0
	r := mustClaim(t, s, "j", ledger.ClaimOptions{})
	must(t)(s.Start(r.ID, nil))
	must(t)(s.Finish(r.ID, ledger.Completed, &code, ""))
	p := filepath.Join(s.dir, jobsDir, "j", summaryName)
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	ro, err := OpenExisting(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	sums, err := ro.Summaries("j")
	if err != nil || len(sums) != 1 || sums[0].Runs[ledger.Completed] != 1 {
		t.Fatalf("Summaries(j) = %+v, %v; want one completed", sums, err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Errorf("after a read that recounted, the summary: %v; want it cached again", err)
	}
}
