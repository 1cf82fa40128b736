//go:build linux

package filestore

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"

	"github.com/tether-sh/tether/lib/ledger"
)

// TestEachHeldPerJob lists a store of many jobs, and again with twice as
// many: what Each holds while it passes on the last record grows by well
// under what one job's log buffers cost (4 KiB each before the lender),
// and every record is passed on once, oldest first.
func TestEachHeldPerJob(t *testing.T) {
	const jobs = maxWindows + 40 // past the lender's windows: they are all in use
	const perJob = 1 << 10       // bytes; a job's walk, log and open descriptor's Go side
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
