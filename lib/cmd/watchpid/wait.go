package watchpid

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/internal/sigdefault"
	"github.com/tether-sh/tether/lib/proc"
)

// goneEvents reports, on the returned channel, the index of each target as
// it goes: at once for targets already gone.
func goneEvents(ctx context.Context, targets []watched) <-chan int {
	ch := make(chan int, len(targets))
	for i, w := range targets {
		if w.h == nil {
			ch <- i
			continue
		}
		go func() {
			if w.h.Wait(ctx) == nil {
				ch <- i
			}
		}()
	}
	return ch
}

// wait blocks in poll(2) on every target from this goroutine: with nothing
// else to do, that is the shortest path from a death to the exit.
func wait(t *cli.Tool, g *grammar, targets []watched, timeout time.Duration) int {
	r := &reporter{t: t, g: g, enc: json.NewEncoder(t.Stdout), done: make([]bool, len(targets))}
	if timeout != 0 && slices.ContainsFunc(targets, func(w watched) bool { return w.h != nil }) &&
		!(g.Any && slices.ContainsFunc(targets, func(w watched) bool { return w.h == nil })) {
		// It will wait, and forwards nothing: QUIT, USR1 and the like end
		// it as a C tool. Caught before it says anything, so that whoever
		// reads its first line may signal it; and only when it waits:
		// catching costs a millisecond.
		sigdefault.AsC(sigdefault.Signals...)
	}
	code := exit.OK
	var hs []*proc.Handle
	var idx []int
	for i, w := range targets {
		if w.h == nil {
			code = r.gone(i, w)
			if g.Any {
				r.running(targets)
				return code
			}
			continue
		}
		hs, idx = append(hs, w.h), append(idx, i)
	}
	gone := make([]bool, len(hs))
	done, err := proc.PollEach(hs, timeout, func(i int) bool {
		gone[i] = true
		code = r.gone(idx[i], targets[idx[i]])
		return g.Any
	})
	if err != nil {
		return t.Fail(err, exit.System)
	}
	r.running(targets)
	if done {
		return code
	}
	var running []string
	for i := range hs {
		if !gone[i] {
			running = append(running, targets[idx[i]].label())
		}
	}
	if !g.Quiet {
		t.Warnf("timed out after %v; still running: %s", timeout, strings.Join(running, ", "))
	}
	return exit.Deadline
}

// reporter says what became of each target: a line on stderr and, with
// --json, an object on stdout.
type reporter struct {
	t    *cli.Tool
	g    *grammar
	enc  *json.Encoder
	done []bool // targets already reported
}

// targetJSON is the --json form of one target; every key is always there.
type targetJSON struct {
	PID  int     `json:"pid"`
	ID   *string `json:"id"`
	Gone bool    `json:"gone"`
	proc.ExitJSON
}

func newTargetJSON(w watched) targetJSON {
	j := targetJSON{PID: w.pid}
	if w.h != nil {
		id := w.h.ID().String()
		j.ID = &id
	}
	return j
}

// gone reports target i, which is gone, and returns the exit code it
// gives watchpid: its own status with --status, else 0.
func (r *reporter) gone(i int, w watched) int {
	r.done[i] = true
	if !r.g.Status && !r.g.JSON {
		if !r.g.Quiet {
			r.t.Warnf("%s is gone", w.label())
		}
		return exit.OK
	}
	info, err := exitInfo(w)
	if r.g.JSON {
		j := newTargetJSON(w)
		j.Gone = true
		if err == nil {
			j.ExitJSON = info.JSON()
		}
		r.enc.Encode(j)
	}
	switch {
	case !r.g.Status:
		if !r.g.Quiet {
			r.t.Warnf("%s is gone", w.label())
		}
		return exit.OK
	case err != nil:
		// Not a success, so said even with --quiet: the 193 needs its why.
		r.t.Warnf("%v", err)
		return exitStatusUnknown
	}
	if !r.g.Quiet {
		r.t.Warnf("%s %s", w.label(), info)
	}
	return info.Status()
}

// running reports, with --json, each target not reported yet: it is still
// running as watchpid returns (--any, or --timeout).
func (r *reporter) running(targets []watched) {
	if !r.g.JSON {
		return
	}
	for i, w := range targets {
		if !r.done[i] {
			r.enc.Encode(newTargetJSON(w))
		}
	}
}

// exitInfo is how target w ended, as far as the kernel can tell.
func exitInfo(w watched) (proc.ExitInfo, error) {
	if w.h == nil {
		return proc.ExitInfo{}, fmt.Errorf("%s was gone before watchpid held a pidfd on it: %w", w.label(), proc.ErrExitUnknown)
	}
	return w.h.ExitInfo()
}
