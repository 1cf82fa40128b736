package pgstore_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestCLIEveryRace: ledger run --every, as the same hourly crontab line
// on several hosts: of runs racing for one period, one runs its payload
// and every other is refused as not due (125), one after another under
// the job's advisory lock, whether it came while the winner ran or after.
func TestCLIEveryRace(t *testing.T) {
	url := newDB(t)
	dir := t.TempDir()
	const n = 12
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, codes[i] = run(t, url, "run", "daily", "--every", "1d", "--", "sh", "-c", "echo ran >> "+dir+"/runs")
		}()
	}
	wg.Wait()
	ran := 0
	for i, c := range codes {
		switch c {
		case 0:
			ran++
		case 125:
		default:
			t.Errorf("run %d exited %d; want 0 or 125", i, c)
		}
	}
	out, _, _ := run(t, url, "list", "--job", "daily", "--status", "completed", "--field", "id")
	runs, _ := os.ReadFile(filepath.Join(dir, "runs"))
	if ran != 1 || strings.Count(out, "\n") != 1 || string(runs) != "ran\n" {
		t.Errorf("%d of %d runs with --every 1d ran, %d completed, payload output %q; want 1 (codes %v)", ran, n, strings.Count(out, "\n"), runs, codes)
	}
}
