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
	"github.com/tether-sh/tether/lib/runner"
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

// attemptRun is one retried run in progress.
type attemptRun struct {
	warn     func(format string, args ...any)
	job      string
	attempts int       // the first and the retries
	until    time.Time // the run's deadline (zero: none)
	failed   int       // attempts that failed so far
	last     Outcome   // the last attempt made
	// notices are what a quiet run holds back unless the last attempt
	// fails.
	quiet   bool
	notices []string
}

// notice says a line, or holds it back in a quiet run.
func (ar *attemptRun) notice(format string, args ...any) {
	if ar.quiet {
		ar.notices = append(ar.notices, fmt.Sprintf(format, args...))
		return
	}
	ar.warn(format, args...)
}

// end is the run's end after attempt k, the last made: a quiet run
// prints, now that it is the last, that attempt's output and notices held
// back, and its own; a run that retried says how many attempts failed.
func (ar *attemptRun) end(k int) Outcome {
	last := ar.last
	if last.release != nil {
		last.release()
		for _, n := range ar.notices {
			ar.warn("%s", n)
		}
	}
	last.release = nil
	if last.Code != exit.OK && k > 1 {
		how := last.Failure
		if how == "" {
			how = fmt.Sprintf("exit %d", last.Code)
		}
		ar.warn("%s: %d of %d attempts failed, the last (attempt %d, %s) ends the run", ar.job, ar.failed, ar.attempts, k, how)
	}
	return last
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
	ar := &attemptRun{warn: warn, job: o.Claim.Job, attempts: r.Retries + 1, quiet: o.Quiet}
	if o.Deadline > 0 {
		ar.until = time.Now().Add(o.Deadline)
	}
	for k := 1; ; k++ {
		a := o
		a.attempts, a.hold, a.runDeadline = ar.attempts, o.Quiet, o.Deadline
		// Recorded as attempt k of attempts; a claim of attempt k > 1 is
		// not refused by the run's own failed attempts of a slot run
		// once (ledger.ClaimOptions.Once). --exclusive and --every are
		// asked again: a run of another host or process that took the
		// job meanwhile (live, or completed within the period) refuses
		// it, and the run ends with its last attempt's status.
		a.Claim.Attempt, a.Claim.Attempts = k, ar.attempts
		if !ar.until.IsZero() {
			// What is left; none at all (Deadline 0 would be no
			// deadline) ends the run.
			if a.Deadline = time.Until(ar.until); a.Deadline <= 0 {
				ar.notice("%s: attempt %d of %d not made: the deadline %v passed", ar.job, k, ar.attempts, o.Deadline)
				return ar.end(k - 1)
			}
		}
		var out Outcome
		if k == 1 && first != nil {
			out = first(a.Options)
		} else {
			out = runJob(warn, st, a)
		}
		if k == 1 && (out.Refused != nil || out.Err != nil) {
			return out
		}
		if k > 1 && (out.Refused != nil || out.ID == "") {
			return ar.notMade(k, out)
		}
		ar.last = out
		if out.Code == exit.OK {
			return out
		}
		ar.failed++
		if out.Failure == "" || k == ar.attempts {
			return ar.end(k)
		}
		if sig, ended := ar.wait(r, k, o.Options); ended {
			out := ar.end(k)
			if sig != 0 {
				warn("%s: %s during the delay before attempt %d of %d: not retrying", ar.job, syntax.SignalName(sig), k+1, ar.attempts)
				out.Code = exit.ForSignal(sig)
			}
			return out
		}
	}
}

// notMade ends the run whose attempt k > 1 was not made (out): refused,
// because another run took the slot or the job since the failed attempt
// (another host, an --exclusive run of the job), which is that run's now,
// and the run ends with the last attempt's status; or not even claimed, a
// fault of the store (said), whose status it ends with.
func (ar *attemptRun) notMade(k int, out Outcome) Outcome {
	if out.Refused != nil {
		ar.notice("%s: attempt %d of %d not made: %v", ar.job, k, ar.attempts, out.Refused)
		return ar.end(k - 1)
	}
	if out.Err != nil {
		ar.warn("%s: attempt %d of %d not made: %v", ar.job, k, ar.attempts, out.Err)
	}
	last := ar.end(k - 1)
	last.Code = out.Code
	return last
}

// wait waits the delay after failed attempt k; ended reports that the
// run ends instead: the delay would end past the deadline (not waited),
// or signal sig came during it.
func (ar *attemptRun) wait(r Retry, k int, o Options) (sig syscall.Signal, ended bool) {
	delay := BackoffDelay(r.Delay, k, r.Rand)
	if !ar.until.IsZero() && !time.Now().Add(delay).Before(ar.until) {
		ar.notice("%s: attempt %d of %d failed (%s); not retrying: the deadline %v passes within the %v delay", ar.job, k, ar.attempts, ar.last.Failure, o.Deadline, roundDelay(delay))
		return 0, true
	}
	ar.notice("%s: attempt %d of %d failed (%s); retrying in %v", ar.job, k, ar.attempts, ar.last.Failure, roundDelay(delay))
	sig = backoff(o, delay)
	return sig, sig != 0
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

// quietRelease prints, for a quiet run whose payload failed (code), the
// output held back and the notices; at once, or when the run ends, by
// the function it returns (o.hold: only the last attempt's are printed).
// nil when there is nothing to print.
func quietRelease(warn func(format string, args ...any), o Options, code int, out *capture, notices []string) func() {
	if !o.Quiet || code == exit.OK {
		return nil
	}
	release := func() {
		out.release()
		for _, n := range notices {
			warn("%s", n)
		}
	}
	if o.hold {
		return release
	}
	release()
	return nil
}

// attemptSignals are the signals the runner forwards to an attempt of a
// retried run, and whether any reached it: a payload that died of the
// operator's TERM is not tried again. Without retries, o.Signals' own,
// and forwarded never holds.
func attemptSignals(o Options) (sigs chan os.Signal, forwarded func() bool, stop func()) {
	sigs = signals(o.Signals)
	if o.attempts == 0 || sigs == nil {
		return sigs, func() bool { return false }, func() {}
	}
	return tapSignals(sigs)
}

// failureOf is Outcome.Failure of a payload that ran as res, its result
// recorded, the run exiting code: a non-zero exit or a signal of its own,
// not the deadline, a lost lease, nor something that survived KILL.
func failureOf(res runner.Result, code int) string {
	switch {
	case code == exit.OK || code != res.ExitCode || res.DeadlineHit || res.Canceled:
		return ""
	case res.Signaled:
		return "signal " + syntax.SignalName(res.Status.Signal())
	}
	return fmt.Sprintf("exit %d", code)
}
