//go:build linux

package filestore

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/filestore/joblog"
)

// TestEachHeldPerJob lists a store of many jobs, and again with twice as
// many: what Each holds while it passes on the last record grows by well
// under what one job's log buffers cost (4 KiB each before the lender),
// and every record is passed on once, oldest first.
func TestEachHeldPerJob(t *testing.T) {
	const jobs = joblog.MaxWindows + 40 // past the lender's windows: they are all in use
	const perJob = 1 << 10              // bytes; a job's walk, log and open descriptor's Go side
	s := newStore(t)
	defer s.Close()
	held := func(want int) (uint64, int) {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		var during uint64
		n, last := 0, ""
		err := s.EachJSON(ledger.Filter{}, func(b []byte) error {
			var r struct{ ID string }
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatalf("EachJSON passed %q: %v", b, err)
			}
			if r.ID <= last {
				t.Errorf("EachJSON passed %s after %s; want oldest first", r.ID, last)
			}
			last = r.ID
			if n++; n == want {
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				during = ms.HeapAlloc
			}
			return nil
		})
		if err != nil {
			t.Fatalf("EachJSON = %v", err)
		}
		return during - min(during, before.HeapAlloc), n
	}
	for i := range jobs {
		cycle(t, s, fmt.Sprintf("j%d", i))
	}
	small, n := held(jobs)
	if n != jobs {
		t.Fatalf("EachJSON of %d jobs passed %d records; want %d", jobs, n, jobs)
	}
	for i := range jobs {
		cycle(t, s, fmt.Sprintf("k%d", i))
	}
	large, n := held(2 * jobs)
	if n != 2*jobs {
		t.Fatalf("EachJSON of %d jobs passed %d records; want %d", 2*jobs, n, 2*jobs)
	}
	t.Logf("held %d bytes at %d jobs, %d at %d", small, jobs, large, 2*jobs)
	if grew := (int64(large) - int64(small)) / jobs; grew > perJob {
		t.Errorf("EachJSON held %d bytes at %d jobs, %d at %d: %d bytes more per job; want at most %d",
			small, jobs, large, 2*jobs, grew, perJob)
	}
}

// TestEachFewLogsOpen lists jobs whose executions alternate while at most
// two of their logs may be open: every record is passed on once, in id
// order, and never more than two logs are open. A log pruned while it was
// closed is reported, not read at stale offsets: the rest is listed; logs
// pruned so are reported in one line.
func TestEachFewLogsOpen(t *testing.T) {
	defer func(n int) { maxOpenLogs = n }(maxOpenLogs)
	maxOpenLogs = 2
	s := newStore(t)
	defer s.Close()
	var want []string
	for range 2 {
		for _, job := range []string{"a", "b", "c"} {
			want = append(want, job+":"+cycle(t, s, job).ID)
		}
	}
	openLogs := func() int {
		fds, _ := os.ReadDir("/proc/self/fd")
		n := 0
		for _, fd := range fds {
			if p, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && strings.HasSuffix(p, "/"+joblog.Name) {
				n++
			}
		}
		return n
	}
	list := func(during func()) ([]string, error) {
		var got []string
		err := s.Each(ledger.Filter{}, func(r ledger.Record) error {
			if n := openLogs(); n > maxOpenLogs {
				t.Errorf("Each held %d logs open; want at most %d", n, maxOpenLogs)
			}
			got = append(got, r.Job+":"+r.ID)
			if len(got) == 1 && during != nil {
				during()
			}
			return nil
		})
		return got, err
	}
	if got, err := list(nil); err != nil || !slices.Equal(got, want) {
		t.Fatalf("Each = %v, %v; want %v", got, err, want)
	}
	// After a's first record, a and c are open: b, read least recently,
	// was closed. Its log's next generation has none of its records.
	got, err := list(func() {
		if n, err := s.Prune(ledger.PruneOptions{Job: "b"}, nil); n != 2 || err != nil {
			t.Fatalf("Prune(b) = %d, %v; want 2", n, err)
		}
	})
	wantRest := slices.DeleteFunc(slices.Clone(want), func(r string) bool { return strings.HasPrefix(r, "b:") })
	if !slices.Equal(got, wantRest) || err == nil || err.Error() != "job b's log was pruned while it was listed; what it holds now is not listed: list again" {
		t.Errorf("Each with b pruned meanwhile = %v, %v; want %v and b's log reported pruned", got, err, wantRest)
	}
	// One log open: after a's first record, b and c are closed, and both
	// pruned: one line says so.
	maxOpenLogs = 1
	cycle(t, s, "b")
	got, err = list(func() {
		for _, job := range []string{"b", "c"} {
			if _, err := s.Prune(ledger.PruneOptions{Job: job}, nil); err != nil {
				t.Fatalf("Prune(%s) = %v", job, err)
			}
		}
	})
	wantA := slices.DeleteFunc(slices.Clone(want), func(r string) bool { return !strings.HasPrefix(r, "a:") })
	if !slices.Equal(got, wantA) || err == nil || err.Error() != "2 jobs' logs were pruned while they were listed (b, c); what they hold now is not listed: list again" {
		t.Errorf("Each with b and c pruned meanwhile = %v, %v; want %v and one line for both", got, err, wantA)
	}
}

// TestEachNewest: Each of a job's newest n, read backwards from the log's
// end, passes what the whole walk's last n are, versions and all, with an
// older execution updated among the newer ones, an open one, and a torn
// tail (an append under way) that sends it to the forward scan. (Not
// parallel: it sets a package hook.)
func TestEachNewest(t *testing.T) {
	walks := 0
	joblog.WalkHook = func(string) { walks++ }
	defer func() { joblog.WalkHook = nil }()
	s := newStore(t)
	defer s.Close()
	code := 3
	long := mustClaim(t, s, "j", ledger.ClaimOptions{})
	must(t)(s.Start(long.ID, nil))
	for range 4 {
		cycle(t, s, "j")
	}
	must(t)(s.Finish(long.ID, ledger.Failed, &code, ""))
	cycle(t, s, "other")
	open := mustClaim(t, s, "j", ledger.ClaimOptions{})
	note := "half"
	must(t)(s.Beat(open.ID, ledger.BeatOptions{Note: &note}))
	all, err := ledger.List(s, ledger.Filter{Job: "j"})
	if err != nil || len(all) != 6 {
		t.Fatalf("List(j) = %d records, %v; want 6", len(all), err)
	}
	check := func(when string) {
		t.Helper()
		for n := 1; n <= len(all); n++ {
			got, err := ledger.List(s, ledger.Filter{Job: "j", Newest: n})
			want := all[max(len(all)-n, 0):]
			js := func(rs []ledger.Record) string {
				b, _ := json.Marshal(rs)
				return string(b)
			}
			if err != nil || js(got) != js(want) {
				t.Errorf("%s: List(j, newest %d) = %s, %v; want %s", when, n, js(got), err, js(want))
			}
		}
	}
	check("whole log")
	// Past one window of the backward read (joblog.ReadSize).
	for range 200 {
		cycle(t, s, "j")
	}
	if all, err = ledger.List(s, ledger.Filter{Job: "j"}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(s.dir + "/jobs/j/_log"); err != nil || fi.Size() < 2*joblog.ReadSize {
		t.Fatalf("the log is %v, %v; want more than two windows", fi.Size(), err)
	}
	walks = 0
	for _, n := range []int{60, 100, 190, len(all)} {
		got, err := ledger.List(s, ledger.Filter{Job: "j", Newest: n})
		if err != nil || len(got) != n || got[0].ID != all[len(all)-n].ID || got[n-1].ID != all[len(all)-1].ID {
			t.Errorf("List(j, newest %d) = %d records, %v; want the last %d of %d", n, len(got), err, n, len(all))
		}
	}
	if walks != 0 {
		t.Errorf("List(j, newest n) walked the log from its start %d times; want it read backwards", walks)
	}
	f, err := os.OpenFile(s.dir+"/jobs/j/_log", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("torn frame"))
	f.Close()
	all = all[len(all)-8:]
	walks = 0
	check("torn tail")
	if walks == 0 {
		t.Errorf("List(j, newest n) of a log with a torn tail never walked it from its start; want the forward scan")
	}
}
