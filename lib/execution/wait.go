package execution

import (
	"context"
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

// WaitResult says how WaitLive ended.
type WaitResult int

const (
	// NoneLive: job had no live execution when WaitLive looked: the
	// refusal that sent the caller here is about something else.
	NoneLive WaitResult = iota
	// Ended: the live executions ended (or their owner did); claim again.
	Ended
	// TimeUp: until passed with an execution still live.
	TimeUp
	// Interrupted: a signal came on sigs (returned).
	Interrupted
)

// WaitLive waits until job's executions that are live now are not, or
// until passes, or a signal arrives on sigs. The store is read once per
// wake-up: after a live owner exited or a poll's backoff. waiting, if
// set, is told what is waited for when the waiting starts.
func WaitLive(st ledger.Ledger, job string, until time.Time, sigs <-chan os.Signal, waiting func(live []ledger.Record)) (WaitResult, os.Signal, error) {
	poll := waitFirstPoll
	waited := false
	for {
		live, err := liveExecutions(st, job)
		if err != nil {
			return TimeUp, nil, err
		}
		if len(live) == 0 {
			if waited {
				return Ended, nil, nil
			}
			return NoneLive, nil, nil
		}
		left := time.Until(until)
		if left <= 0 {
			return TimeUp, nil, nil
		}
		if !waited && waiting != nil {
			waiting(live)
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
		ended, sig := waitAny(hs, min(left, poll), sigs)
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
