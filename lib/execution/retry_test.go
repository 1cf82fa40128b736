package execution

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestBackoffDelay(t *testing.T) {
	const draws = 200
	for _, c := range []struct {
		base time.Duration
		k    int
		want time.Duration // before jitter: the delay is in [want/2, want]
	}{
		{10 * time.Second, 1, 10 * time.Second},
		{10 * time.Second, 2, 20 * time.Second},
		{10 * time.Second, 3, 40 * time.Second},
		{10 * time.Second, 4, 80 * time.Second},
		{10 * time.Second, 5, 100 * time.Second}, // capped: 10·D
		{10 * time.Second, 60, 100 * time.Second},
		{10 * time.Second, 1 << 30, 100 * time.Second},
		{100 * time.Millisecond, 1, 100 * time.Millisecond},
		{100 * time.Millisecond, 3, 400 * time.Millisecond},
		{100 * time.Millisecond, 5, time.Second},
		{3 * time.Hour, 10, 30 * time.Hour},
		{time.Nanosecond, 1, time.Nanosecond},
		{time.Duration(1<<62) / 5, 5, time.Duration(1<<63 - 1)}, // 10·D overflows: the largest duration caps it
		{0, 3, 0},
	} {
		rnd := rand.New(rand.NewPCG(1, 2))
		lo, hi := c.want-c.want/2, c.want
		var least, most time.Duration = hi, lo
		for range draws {
			d := BackoffDelay(c.base, c.k, rnd)
			if d < lo || d > hi {
				t.Fatalf("BackoffDelay(%v, %d) = %v; want within [%v, %v]", c.base, c.k, d, lo, hi)
			}
			least, most = min(least, d), max(most, d)
		}
		// Jittered: the draws spread over the range, not all one value.
		if hi-lo >= 1000 && most-least < (hi-lo)/2 {
			t.Errorf("BackoffDelay(%v, %d): %d draws spread over [%v, %v]; want over half of [%v, %v]", c.base, c.k, draws, least, most, lo, hi)
		}
	}
}

func TestBackoffDelaySeeded(t *testing.T) {
	a, b := rand.New(rand.NewPCG(7, 9)), rand.New(rand.NewPCG(7, 9))
	for k := 1; k <= 8; k++ {
		if da, db := BackoffDelay(time.Second, k, a), BackoffDelay(time.Second, k, b); da != db {
			t.Fatalf("BackoffDelay(1s, %d) = %v and %v from one seed; want the same", k, da, db)
		}
	}
}

// TestOutcomeFailure: only the payload's own failure is one another
// attempt may mend.
func TestOutcomeFailure(t *testing.T) {
	st, _, _ := started(t)
	for _, c := range []struct {
		argv     []string
		deadline time.Duration
		code     int
		want     string
	}{
		{[]string{"true"}, 0, 0, ""},
		{[]string{"sh", "-c", "exit 3"}, 0, 3, "exit 3"},
		{[]string{"sh", "-c", "kill -KILL $$"}, 0, 137, "signal KILL"},
		{[]string{"sleep", "10"}, 50 * time.Millisecond, 124, ""},
		{[]string{"./no-such-payload"}, 0, 127, ""},
	} {
		tl, errb := tool()
		o := RunOptions{Claim: Claim{Job: "failure"}, Options: Options{Argv: c.argv, Grace: time.Second, Deadline: c.deadline}}
		o.attempts = 2
		out := runJob(tl, st, o)
		if out.Code != c.code || out.Failure != c.want {
			t.Errorf("runJob(%q) = code %d, failure %q; want %d, %q (stderr %q)", c.argv, out.Code, out.Failure, c.code, c.want, errb)
		}
	}
}
