package runner

import (
	"context"
	"errors"
	"os"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/proc"
	"github.com/tether-sh/tether/lib/stop"
)

// cleanup stops and reaps everything the command left behind.
func cleanup(r *reaper, sched stop.Schedule, stoppedWith map[int]bool, res *Result) {
	r.countFromNow()
	tree := stop.NewDescendants("leftover processes", &r.hold)
	tree.Skip(r.inheritedNow())
	defer tree.Close()
	if !r.isDone() {
		lt := &leftovers{Tree: tree, done: r.done}
		out := stop.Run(context.Background(), []stop.Target{lt}, sched)
		if !out[0].Gone {
			live, err := tree.Sweep()
			// A process /proc could not show (EMFILE) is not gone: it
			// counts as a survivor, never as stopped.
			var unreadable *proc.UnreadableError
			if errors.As(err, &unreadable) {
				for _, pid := range unreadable.PIDs {
					live = append(live, proc.ID{PID: pid})
				}
			}
			res.Survivors = live
			if len(live) == 0 {
				// Only zombies are left between two wait4 calls.
				select {
				case <-r.done:
				case <-time.After(time.Second):
					if err != nil {
						// Children unreaped, and no walk to name them.
						res.Unjudged = err
					}
				}
			}
		}
	}
	res.Killed = tree.Killed()
	// Leftovers: what the walks found plus what was reaped since the
	// cleanup began (a zombie re-parented to us when a walk was not looking).
	byPID := map[int]proc.ID{}
	for _, pid := range r.reapedAfter() {
		if !stoppedWith[pid] {
			byPID[pid] = proc.ID{PID: pid}
		}
	}
	for _, id := range tree.Found() {
		byPID[id.PID] = id
	}
	for _, id := range byPID {
		res.Leftovers = append(res.Leftovers, id)
	}
	slices.SortFunc(res.Leftovers, func(a, b proc.ID) int { return a.PID - b.PID })
}

// inheritedChildren lists the runner's children before the command
// starts: processes it inherited through exec, never the command's.
func inheritedChildren() []proc.ID {
	kids, _ := proc.Children(os.Getpid())
	return kids
}

// inheritedNow returns the inherited children not yet reaped.
func (r *reaper) inheritedNow() []proc.ID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.inherited)
}

// leftovers is the Target for everything left behind: the caller's
// descendants, gone exactly when the reaping loop finds no child left. A
// subreaper's descendants cannot escape it, so that is both exact and
// event-driven; the walk only serves to signal them.
type leftovers struct {
	*stop.Tree
	done <-chan struct{}
	sig  unix.Signal
}

func (l *leftovers) Gone() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

func (l *leftovers) Signal(sig unix.Signal) error {
	l.sig = sig
	err := l.Tree.Signal(sig)
	if errors.Is(err, proc.ErrGone) && !l.Gone() {
		// Nothing runs, but zombies wait to be reaped: not gone yet.
		return nil
	}
	return err
}

// Wait waits for the reaping loop to run out of children. During a KILL
// step it also kills, every few milliseconds, any descendant that appeared
// after the freeze (one that could not be stopped in time).
func (l *leftovers) Wait(ctx context.Context) error {
	var tick <-chan time.Time
	if l.sig == unix.SIGKILL {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-l.done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-tick:
			l.Tree.Sweep()
		}
	}
}
