package execution

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/syntax"
)

// Retries (ledger run --retry N, --retry-delay D): a payload that failed
// of its own accord (Outcome.Failure: a non-zero exit, or a signal that
// the runner did not forward) is run again, up to N more times, each
// attempt its own execution of the same job, instant and source, claimed
// afresh after a delay. Nothing else is retried: a refusal, a fault of
// the tool or the store (125; 126 and 127, a payload that cannot be
// executed), the deadline (124: it bounds all attempts, so none is
// left), a lost lease, a signal the operator sent.
//
// The delay before the attempt after failed attempt k is BackoffDelay:
// D·2^(k-1), capped at MaxDelayFactor·D, with equal jitter (half of it
// fixed, half random), so that a fleet's retries spread out yet never
// come at once. --deadline counts from the first claim: an attempt runs
// with what is left, and a delay that would end past it is not waited.

// DefaultRetryDelay is --retry-delay's default.
const DefaultRetryDelay = 10 * time.Second

// MaxDelayFactor caps a retry's delay at this many base delays (before
// jitter): with the default 10s, at 100s.
const MaxDelayFactor = 10

// Retry says how RunJob retries a payload that failed.
type Retry struct {
	// Retries is how many more attempts may follow the first (0: none).
	Retries int
	// Delay is the base delay (BackoffDelay); 0 is DefaultRetryDelay.
	Delay time.Duration
	// Rand draws the jitter; nil: a source of its own, seeded at random.
	Rand *rand.Rand
}

// BackoffDelay is the delay before the attempt that follows failed
// attempt k (1-based): b = min(MaxDelayFactor·base, base·2^(k-1)), then
// equal jitter, a delay drawn uniformly from [b/2, b].
func BackoffDelay(base time.Duration, k int, rnd *rand.Rand) time.Duration {
	if base <= 0 {
		return 0
	}
	ceil := base * MaxDelayFactor
	if ceil/MaxDelayFactor != base {
		ceil = time.Duration(1<<63 - 1) // overflowed: no cap below the largest duration
	}
	b := base
	for i := 1; i < k && b < ceil; i++ {
		if b > ceil/2 {
			b = ceil
			break
		}
		b *= 2
	}
	b = min(b, ceil)
	half := b / 2
	return b - half + time.Duration(rnd.Int64N(int64(half)+1))
}

// runAttempts is RunJob with retries: the first attempt as runJob makes
// it (a refusal of it is RunJob's refusal), then up to o.Retry.Retries
// more while the payload fails. It returns the last attempt's outcome.
//
// first, when set, makes the first attempt instead of a claim (spawn's
// worker adopts it), with the attempt's options.
func runAttempts(warn func(format string, args ...any), st ledger.Ledger, o RunOptions, first func(Options) Outcome) Outcome {
	r := o.Retry
	if r.Delay <= 0 {
		r.Delay = DefaultRetryDelay
	}
	if r.Rand == nil {
		r.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	// notice says what a quiet run holds back unless the last attempt
	// fails.
	var notices []string
	notice := warn
	if o.Quiet {
		notice = func(format string, args ...any) { notices = append(notices, fmt.Sprintf(format, args...)) }
	}
	job, attempts := o.Claim.Job, r.Retries+1
	var until time.Time
	if o.Deadline > 0 {
		until = time.Now().Add(o.Deadline)
	}
	failed := 0
	var last Outcome
	// end is the run's end after the last attempt made, failed: a quiet
	// run prints, now that it is the last, that attempt's output and
	// notices held back, and its own; then a line that says how many
	// attempts failed.
	end := func(k int) Outcome {
		if last.release != nil {
			last.release()
			for _, n := range notices {
				warn("%s", n)
			}
		}
		last.release = nil
		if last.Code != exit.OK && k > 1 {
			how := last.Failure
			if how == "" {
				how = fmt.Sprintf("exit %d", last.Code)
			}
			warn("%s: %d of %d attempts failed, the last (attempt %d, %s) ends the run", job, failed, attempts, k, how)
		}
		return last
	}
	for k := 1; ; k++ {
		a := o
		a.attempts, a.hold, a.runDeadline = attempts, o.Quiet, o.Deadline
		// Recorded as attempt k of attempts; a claim of attempt k > 1 is
		// not refused by the run's own failed attempts of a slot run
		// once (ledger.ClaimOptions.Once). --exclusive and --every are
		// asked again: a run of another host or process that took the
		// job meanwhile (live, or completed within the period) refuses
		// it, and the run ends with its last attempt's status.
		a.Claim.Attempt, a.Claim.Attempts = k, attempts
		if !until.IsZero() {
			// What is left; none at all (Deadline 0 would be no
			// deadline) ends the run.
			if a.Deadline = time.Until(until); a.Deadline <= 0 {
				notice("%s: attempt %d of %d not made: the deadline %v passed", job, k, attempts, o.Deadline)
				return end(k - 1)
			}
		}
		var out Outcome
		if k == 1 && first != nil {
			out = first(a.Options)
		} else {
			out = runJob(warn, st, a)
		}
		switch {
		case out.Refused != nil && k == 1:
			return out
		case out.Refused != nil:
			// Another run took the slot (another host, an --exclusive
			// run of the job) since the failed attempt: it is that run's
			// now. The run ends with the last attempt's status.
			notice("%s: attempt %d of %d not made: %v", job, k, attempts, out.Refused)
			return end(k - 1)
		case k == 1 && out.Err != nil:
			return out
		case k > 1 && out.ID == "":
			// Not even claimed (a fault of the store, said): the run
			// ends with that fault's status.
			if out.Err != nil {
				warn("%s: attempt %d of %d not made: %v", job, k, attempts, out.Err)
			}
			code := out.Code
			out = end(k - 1)
			out.Code = code
			return out
		}
		last = out
		if out.Code == exit.OK {
			return out
		}
		failed++
		if out.Failure == "" || k == attempts {
			return end(k)
		}
		delay := BackoffDelay(r.Delay, k, r.Rand)
		if !until.IsZero() && !time.Now().Add(delay).Before(until) {
			notice("%s: attempt %d of %d failed (%s); not retrying: the deadline %v passes within the %v delay", job, k, attempts, out.Failure, o.Deadline, roundDelay(delay))
			return end(k)
		}
		notice("%s: attempt %d of %d failed (%s); retrying in %v", job, k, attempts, out.Failure, roundDelay(delay))
		if sig := backoff(o.Options, delay); sig != 0 {
			out := end(k)
			warn("%s: %s during the delay before attempt %d of %d: not retrying", job, syntax.SignalName(sig), k+1, attempts)
			out.Code = exit.ForSignal(sig)
			return out
		}
	}
}

// roundDelay is d as a notice says it: to the millisecond below a second,
// to a tenth of a second above.
func roundDelay(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}

// backoff waits d, or until a signal that ends a run (TERM, INT, HUP,
// QUIT) arrives in o.Signals, which it returns; others are ignored: there
// is no payload to forward them to.
func backoff(o Options, d time.Duration) syscall.Signal {
	t := time.NewTimer(d)
	defer t.Stop()
	var c chan os.Signal
	if o.Signals != nil {
		c = o.Signals.C()
	}
	for {
		select {
		case <-t.C:
			return 0
		case s := <-c:
			switch s {
			case syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT:
				return s.(syscall.Signal)
			}
		}
	}
}

// tapSignals passes the signals of in on to the channel it returns, and
// tells whether any was; stop ends the passing.
func tapSignals(in chan os.Signal) (out chan os.Signal, forwarded func() bool, stop func()) {
	out = make(chan os.Signal, cap(in)+1)
	var seen atomic.Bool
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-in:
				seen.Store(true)
				select {
				case out <- s:
				case <-done:
					return
				}
			case <-done:
				return
			}
		}
	}()
	return out, seen.Load, func() { close(done) }
}

// adoptAttempts is Adopt with retries (spawn's worker, adopt --retry):
// the fenced execution o.ID is the first attempt; the later ones are
// claimed afresh for its job, instant, source and schedule, as ledger
// run's retries are, with o.Claim's Exclusive and Every.
func adoptAttempts(warn func(format string, args ...any), st ledger.Ledger, o AdoptOptions) Outcome {
	rec, err := st.Get(o.ID)
	if err != nil {
		// Adopt says why (its store's words).
		o.Retry = Retry{}
		return Adopt(warn, st, o)
	}
	if o.Signals == nil {
		// Caught across the attempts and their delays.
		o.Signals = CatchSignals()
		defer o.Signals.Stop()
	}
	cl := o.Claim
	cl.Job, cl.Source, cl.Instant, cl.Schedule = rec.Job, rec.Source, rec.Instant, rec.Schedule
	// A --schedule slot runs once (ledger.ClaimOptions.Once): its record
	// names a cron schedule, not --every's "@every".
	cl.Once = rec.Schedule != "" && !rec.Instant.IsZero()
	ro := RunOptions{Options: o.Options, Claim: cl, Retry: o.Retry}
	return runAttempts(warn, st, ro, func(a Options) Outcome {
		ao := o
		ao.Options, ao.Retry = a, Retry{}
		return adopt(warn, st, ao)
	})
}
