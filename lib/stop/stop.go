// Package stop is tether's bounded stop engine: send a schedule of signals
// to a set of targets, waiting at most a bound after each, and return the
// moment every target is gone — not at the next poll tick.
//
// A schedule reads like start-stop-daemon's --retry: TERM/5/KILL/5 sends
// TERM, waits up to 5s, sends KILL, waits up to 5s. stopbounded, watchpid,
// reap and ledger run all stop processes through Run.
package stop

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tether-sh/tether/lib/syntax"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/proc"
)

// DefaultGrace is the wait after the first signal, and DefaultKillWait the
// wait after KILL, when no schedule is given.
const (
	DefaultGrace    = 5 * time.Second
	DefaultKillWait = 5 * time.Second
)

// ErrBadSchedule is wrapped by ParseSchedule errors.
var ErrBadSchedule = errors.New("invalid schedule")

// Step sends Signal, then waits up to Wait for the targets to be gone.
type Step struct {
	Signal unix.Signal
	Wait   time.Duration
}

// Schedule is a list of steps run in order until every target is gone.
type Schedule []Step

// Default returns the schedule SIG, wait GRACE, KILL, wait 5s.
func Default(sig unix.Signal, grace time.Duration) Schedule {
	if sig == unix.SIGKILL {
		return Schedule{{unix.SIGKILL, DefaultKillWait}}
	}
	return Schedule{{sig, grace}, {unix.SIGKILL, DefaultKillWait}}
}

// ParseSchedule parses SIG/WAIT[/SIG/WAIT...] where SIG is a signal name or
// number (0: none, only the wait) and WAIT a duration (bare numbers are
// seconds). A bare duration T
// alone means TERM/T/KILL/T, as in start-stop-daemon.
func ParseSchedule(s string) (Schedule, error) {
	parts := strings.Split(s, "/")
	if len(parts) == 1 {
		d, err := syntax.ParseDuration(parts[0])
		if err != nil {
			return nil, fmt.Errorf("%w %q: want SIG/WAIT[/SIG/WAIT...]", ErrBadSchedule, s)
		}
		return Schedule{{unix.SIGTERM, d}, {unix.SIGKILL, d}}, nil
	}
	if len(parts)%2 != 0 {
		return nil, fmt.Errorf("%w %q: every signal needs a wait after it", ErrBadSchedule, s)
	}
	var sched Schedule
	for i := 0; i < len(parts); i += 2 {
		sig, err := syntax.ParseStopSignal(parts[i])
		if err != nil {
			return nil, fmt.Errorf("%w %q: %v", ErrBadSchedule, s, err)
		}
		d, err := syntax.ParseDuration(parts[i+1])
		if err != nil {
			return nil, fmt.Errorf("%w %q: %v", ErrBadSchedule, s, err)
		}
		sched = append(sched, Step{sig, d})
	}
	return sched, nil
}

// String formats the schedule as SIG/SECONDS/... .
func (s Schedule) String() string {
	var b strings.Builder
	for i, st := range s {
		if i > 0 {
			b.WriteByte('/')
		}
		fmt.Fprintf(&b, "%s/%g", syntax.SignalName(st.Signal), st.Wait.Seconds())
	}
	return b.String()
}

// Target is something the engine can signal and wait for.
type Target interface {
	// Label names the target in messages: "pid 42", "process group 42".
	Label() string
	// Signal sends sig. It returns an error wrapping proc.ErrGone when
	// nothing is left to signal.
	Signal(sig unix.Signal) error
	// Wait blocks until the target is gone (nil) or ctx is done.
	Wait(ctx context.Context) error
	// Gone reports without blocking whether the target is gone.
	Gone() bool
}

// Outcome is what happened to one target.
type Outcome struct {
	Target Target
	// Gone reports whether the target was gone when Run returned.
	Gone bool
	// Step is the index of the schedule step during which the target went,
	// or -1 if it was gone before the first signal.
	Step int
	// Sent lists the signals actually delivered, in order.
	Sent []unix.Signal
	// Err is the error that stopped signalling the target (permission).
	Err error
	// Elapsed is the time from the start of Run until the target was seen
	// gone (or until Run returned).
	Elapsed time.Duration
}

// Killed reports whether the target outlived the earlier signals and went
// only after KILL. Last reports the signal it ignored (the one sent just
// before KILL).
func (o Outcome) Killed() (killed bool, last unix.Signal) {
	n := len(o.Sent)
	if !o.Gone || n < 2 || o.Sent[n-1] != unix.SIGKILL {
		return false, 0
	}
	for i := n - 2; i >= 0; i-- {
		if o.Sent[i] != unix.SIGKILL {
			return true, o.Sent[i]
		}
	}
	return false, 0
}

// Run stops targets with sched and returns one Outcome per target, in order.
// It returns as soon as every target is gone, when the schedule is spent,
// or when ctx is done. A target that cannot be signalled (permission) is
// not waited for.
func Run(ctx context.Context, targets []Target, sched Schedule) []Outcome {
	start := time.Now()
	out := make([]Outcome, len(targets))
	live := make([]int, 0, len(targets))
	for i, t := range targets {
		out[i] = Outcome{Target: t, Step: -1}
		if t.Gone() {
			out[i].Gone = true
			continue
		}
		live = append(live, i)
	}
	for step, st := range sched {
		if len(live) == 0 || ctx.Err() != nil {
			break
		}
		waiting := live[:0:0]
		for _, i := range live {
			err := targets[i].Signal(st.Signal)
			switch {
			case err == nil:
				out[i].Sent = append(out[i].Sent, st.Signal)
				waiting = append(waiting, i)
			case errors.Is(err, proc.ErrGone):
				out[i].Gone, out[i].Step, out[i].Elapsed = true, step, time.Since(start)
			default:
				out[i].Err = err
			}
		}
		live = waitStep(ctx, targets, waiting, st.Wait, func(i int) {
			out[i].Gone, out[i].Step, out[i].Elapsed = true, step, time.Since(start)
		})
	}
	for _, i := range live {
		if targets[i].Gone() {
			out[i].Gone, out[i].Step = true, len(sched)-1
		}
		out[i].Elapsed = time.Since(start)
	}
	return out
}

// waitStep waits up to d for the targets at idx, calling gone for each one
// that goes, and returns the indexes still live when the wait ends.
func waitStep(ctx context.Context, targets []Target, idx []int, d time.Duration, gone func(int)) []int {
	if len(idx) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	type result struct {
		i   int
		err error
	}
	results := make(chan result, len(idx))
	for _, i := range idx {
		go func() { results <- result{i, targets[i].Wait(ctx)} }()
	}
	left := make(map[int]bool, len(idx))
	for _, i := range idx {
		left[i] = true
	}
	for range idx {
		r := <-results
		if r.err == nil {
			gone(r.i)
			delete(left, r.i)
			if len(left) == 0 {
				return nil
			}
		}
	}
	live := make([]int, 0, len(left))
	for _, i := range idx {
		if left[i] {
			live = append(live, i)
		}
	}
	return live
}
