package execution

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/proc"
)

// ledger run --exclusive --wait D: a claim refused because a run of the
// job is live waits for that run to end, then claims again, until D has
// passed. An owner on this host and in this PID namespace is waited for
// through a pidfd (it exits right after recording its result), so the
// next claim follows its end at once. Anything else — an owner on
// another host, a dead owner whose payload's group still runs (recover
// keeps that record running) — is looked at again with a backoff from
// waitFirstPoll to waitMaxPoll: a bounded poll of the store.

const (
	waitFirstPoll = 50 * time.Millisecond
	waitMaxPoll   = time.Second
)

// WaitResult says how a LiveWait ended.
type WaitResult int

const (
	// NoneLive: job had no live execution, twice in a row with no new
	// execution between: the refusal that sent the caller here is about
	// something else (an instant taken, a period not due). Refuse.
	NoneLive WaitResult = iota
	// Ended: the live executions ended (or their owner did), or none was
	// live any more when looked at; claim again.
	Ended
	// TimeUp: until passed with an execution still live.
	TimeUp
	// Interrupted: a signal came on sigs (returned).
	Interrupted
)

// LiveWait is the waiting of one ledger run --exclusive --wait, across
// its refused claims: call Wait after each refusal.
//
// A live run can end between the claim's refusal and the wait's first
// look. Nothing live any more then means claim again, never a refusal:
// taking it for one gave callers up without waiting, and under
// --conflict-exit 0 exited 0 with nothing run. A refusal that is about
// something else finds nothing live every time, and nothing new either:
// one more claim, refused with the job's newest execution unchanged and
// still nothing live, tells it apart from a run that came and went.
type LiveWait struct {
	Job   string
	Until time.Time
	Sigs  <-chan os.Signal
	// Waiting, if set, is told what is waited for when the waiting
	// starts (once per LiveWait).
	Waiting func(live []ledger.Record)

	said   bool
	quiet  bool   // the last look found nothing live
	newest string // the job's newest execution then ("" none)
}

// Wait waits after a refused claim until job's executions that are live
// now are not, or until passes, or a signal arrives on sigs. The store is
// read once per wake-up: after a live owner exited or a poll's backoff.
func (lw *LiveWait) Wait(st ledger.Ledger) (WaitResult, os.Signal, error) {
	poll := waitFirstPoll
	waited := false
	for {
		// The newest execution is read before the live ones: one claimed
		// between the two would otherwise be neither seen live nor new.
		newest := ""
		if !waited {
			r, err := st.Latest(lw.Job)
			switch {
			case err == nil:
				newest = r.ID
			case !errors.Is(err, ledger.ErrNotFound):
				return TimeUp, nil, err
			}
		}
		live, err := liveExecutions(st, lw.Job)
		if err != nil {
			return TimeUp, nil, err
		}
		if len(live) == 0 {
			if waited {
				lw.quiet = false
				return Ended, nil, nil
			}
			return lw.noneLive(newest), nil, nil
		}
		lw.quiet = false
		left := time.Until(lw.Until)
		if left <= 0 {
			return TimeUp, nil, nil
		}
		if !lw.said && lw.Waiting != nil {
			lw.Waiting(live)
			lw.said = true
		}
		waited = true
		var hs []*proc.Handle
		for _, r := range live {
			if !ledger.IsLocal(r.Owner) {
				continue
			}
			if h, err := proc.Open(r.Owner.ID()); err == nil {
				hs = append(hs, h)
			}
		}
		ended, sig := waitAny(hs, min(left, poll), lw.Sigs)
		for _, h := range hs {
			h.Close()
		}
		if sig != nil {
			return Interrupted, sig, nil
		}
		if !ended {
			poll = min(2*poll, waitMaxPoll)
		}
	}
}

// noneLive answers a refusal after which nothing is live, newest being
// the job's newest execution before the look: claim again, unless the
// last look found nothing live too and the job has had no new execution
// since, so that the claim between was refused for something else than a
// live run.
func (lw *LiveWait) noneLive(newest string) WaitResult {
	if lw.quiet && newest == lw.newest {
		return NoneLive
	}
	if lw.quiet && !time.Now().Before(lw.Until) {
		// Runs that start and end between each claim and each look could
		// keep a caller claiming past until: give up as busy.
		return TimeUp
	}
	lw.quiet, lw.newest = true, newest
	return Ended
}

// waitAny waits up to d for one of hs to exit (ended), or a signal.
func waitAny(hs []*proc.Handle, d time.Duration, sigs <-chan os.Signal) (ended bool, sig os.Signal) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	done := make(chan bool, 1)
	go func() {
		if len(hs) == 0 {
			<-ctx.Done()
			done <- false
			return
		}
		done <- proc.WaitAll(ctx, hs, true) == nil
	}()
	select {
	case ended = <-done:
		return ended, nil
	case sig = <-sigs:
		cancel()
		<-done
		return false, sig
	}
}

// liveExecutions returns job's claimed (fenced or not) and running
// executions.
func liveExecutions(st ledger.Ledger, job string) ([]ledger.Record, error) {
	var live []ledger.Record
	for _, status := range []ledger.Status{ledger.Claimed, ledger.Running} {
		recs, err := ledger.List(st, ledger.Filter{Job: job, Status: status})
		if err != nil {
			return nil, err
		}
		live = append(live, recs...)
	}
	return live, nil
}
