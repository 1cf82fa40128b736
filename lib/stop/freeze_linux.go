package stop

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/proc"
)

// The freeze strategy of NewTree (stopbounded --tree): stop every member
// with SIGSTOP and walk until the set is closed, then signal it; see Tree.

// ErrInterrupted is returned by Signal once Interrupt was called.
var ErrInterrupted = errors.New("interrupted")

// Interrupt ends the stop of t: a freeze under way stops at once, the
// step's signal is not sent, what was frozen is continued, and later
// Signal calls return ErrInterrupted. It does not block; call Thaw after
// the engine has returned to make sure nothing is left stopped.
func (t *Tree) Interrupt() { t.interrupted.Store(true) }

// Thaw continues (SIGCONT through its pidfd) every member not seen gone.
// It waits for a Signal under way, which ends at once after Interrupt.
func (t *Tree) Thaw() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.thaw()
}

// freeze stops every member and walks until the set is closed (see Tree):
// a walk that starts once every member has been seen stopped, and finds no
// new member, has seen every child any member can have. A member that
// cannot stop (uninterruptible sleep) ends the freeze after freezeLimit; a
// fork loop that keeps adding members is followed until freezeGiveUp.
// t.mu is held.
func (t *Tree) freeze() error {
	r, err := proc.NewScanner()
	if err != nil {
		return err
	}
	defer r.Close()
	if t.Guard != nil {
		// A guardian that died since the last freeze (killed with a tree
		// it was found in) cannot continue this one: replace it, or
		// freeze nothing.
		if err := t.Guard.Ensure(); err != nil {
			return fmt.Errorf("cannot freeze %s safely: %w", t.Label(), err)
		}
	}
	start := time.Now()
	// Members found by an earlier step were continued since: stop them
	// again; the walks below stop the newcomers.
	for _, m := range t.liveMembers() {
		m.stopped = false
		t.stop(m)
	}
	for {
		if err := t.freezeErr(); err != nil {
			return err
		}
		allStopped := t.waitStopped(r, start.Add(freezeLimit))
		snap, err := r.Snapshot()
		if err != nil {
			return err
		}
		added, _ := t.refresh(r, snap, walkStop)
		if added == 0 && (allStopped || time.Since(start) > freezeLimit) {
			return nil
		}
		if time.Since(start) > freezeGiveUp || len(t.liveMembers()) == 0 {
			return t.freezeErr()
		}
	}
}

// stop freezes one member (SIGSTOP), handing its pidfd to t.Guard first.
// A member the guard could not take is left running. t.mu is held.
func (t *Tree) stop(m *member) {
	if t.stopErr != nil || t.interrupted.Load() {
		return
	}
	if t.Guard != nil && m.guardGen != t.Guard.Gen() {
		if err := t.Guard.Hold(m.Pidfd(), m.ID()); err != nil {
			t.stopErr = err
			return
		}
		m.guardGen = t.Guard.Gen()
	}
	m.signal(unix.SIGSTOP)
}

// freezeErr reports why the freeze must end now: an interruption, or a
// member that could not be frozen safely. t.mu is held.
func (t *Tree) freezeErr() error {
	if t.interrupted.Load() {
		return fmt.Errorf("%s: %w", t.Label(), ErrInterrupted)
	}
	if t.stopErr != nil {
		return fmt.Errorf("%s: %w", t.Label(), t.stopErr)
	}
	return nil
}

// thaw continues every live member. t.mu is held.
func (t *Tree) thaw() {
	for _, m := range t.liveMembers() {
		m.signal(unix.SIGCONT)
	}
}

// waitStopped polls each live member not yet seen stopped until it is
// stopped or gone, or until deadline. It reports whether all are. t.mu is
// held.
func (t *Tree) waitStopped(r *proc.Scanner, deadline time.Time) bool {
	pause := 50 * time.Microsecond
	for {
		if t.interrupted.Load() {
			return false
		}
		all := true
		for _, m := range t.members {
			if m.gone || m.stopped {
				continue
			}
			st, err := r.Stat(m.ID().PID)
			switch {
			case err != nil && !errors.Is(err, proc.ErrGone):
				m.unjudged = err // not seen is not gone
				all = false
			case err != nil || st.Start != m.ID().Start || st.Exited():
				m.markGone()
			default:
				// A zombie leader's threads say whether its group stopped.
				stopped, err := r.GroupStopped(st)
				switch {
				case errors.Is(err, proc.ErrGone):
					m.markGone()
				case err != nil:
					m.unjudged = err
					all = false
				case stopped:
					m.stopped = true
				default:
					all = false
				}
			}
		}
		if all {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		// Leave the CPU to the processes that have to run to stop.
		time.Sleep(pause)
		pause = min(2*pause, 2*time.Millisecond)
	}
}

// signalFrozen is Signal for NewTree: freeze the tree, send sig to every
// member, and continue them so that they can act on it. An error means
// nothing was sent: the freeze failed or was interrupted, and what it had
// stopped is continued. t.mu is held.
func (t *Tree) signalFrozen(sig unix.Signal) (sent int, firstErr, err error) {
	if t.interrupted.Load() {
		return 0, nil, t.freezeErr()
	}
	err = t.freeze()
	if err == nil {
		err = t.freezeErr() // interrupted after the freeze
	}
	if err != nil {
		// Never leave the tree frozen: not for an interruption, a
		// lost guard, nor an unreadable /proc.
		t.thaw()
		return 0, nil, err
	}
	live := t.liveMembers()
	// Signal in PID order so that repeated runs behave alike.
	slices.SortFunc(live, func(a, b *member) int { return a.ID().PID - b.ID().PID })
	sent, firstErr = t.signalMembers(live, sig)
	if needsCont(sig) {
		for _, m := range live {
			m.signal(unix.SIGCONT)
		}
	}
	return sent, firstErr, nil
}
