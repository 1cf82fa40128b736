package ledgercmd

import (
	"testing"
	"time"
)

// TestJitterDelay: --jitter's delay is below D, the same for a job on a
// host every time, and spread across hosts and jobs.
func TestJitterDelay(t *testing.T) {
	const d = time.Hour
	seen := map[time.Duration]bool{}
	for _, host := range []string{"4f8c2e7a1b2d4c3e9f000123456789ab", "0e3b2c1a9d8f7e6d5c4b3a2918273645", "web-1"} {
		for _, job := range []string{"backup", "report", "backup2"} {
			got := jitterDelay(host, job, d)
			if got < 0 || got >= d {
				t.Errorf("jitterDelay(%s, %s, %v) = %v; want 0 <= delay < %v", host, job, d, got, d)
			}
			if again := jitterDelay(host, job, d); again != got {
				t.Errorf("jitterDelay(%s, %s, %v) = %v, then %v; want the same", host, job, d, got, again)
			}
			seen[got] = true
		}
	}
	if len(seen) != 9 {
		t.Errorf("jitterDelay over 3 hosts and 3 jobs gave %d distinct delays; want 9", len(seen))
	}
	if got := jitterDelay("h", "j", 0); got != 0 {
		t.Errorf("jitterDelay(h, j, 0) = %v; want 0", got)
	}
}
