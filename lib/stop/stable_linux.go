package stop

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/proc"
)

// The repeat-until-stable strategy of NewDescendants (the runner's sweep
// of a subreaper's descendants): signal, walk again, until a walk finds
// nobody new; see NewDescendants.

// signalUntilStable is Signal for NewDescendants: walk, signal everyone
// not yet signalled, and walk again until a walk — taken after every
// signal before it was sent — finds nobody new. A stopped member is
// continued so that it can act on sig. A fork loop that ignores sig never
// settles; it is left to the next step after repeatLimit. t.mu is held.
func (t *Tree) signalUntilStable(sig unix.Signal) (sent int, firstErr error) {
	r, err := proc.NewScanner()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	deadline := time.Now().Add(repeatLimit)
	for round := 0; ; round++ {
		added, n, err := t.signalPass(r, sig)
		sent += n
		if firstErr == nil {
			firstErr = err
		}
		if (added == 0 && round > 0) || time.Now().After(deadline) || len(t.liveMembers()) == 0 {
			return sent, firstErr
		}
	}
}

// signalPass is one round of signalUntilStable, under hold.
func (t *Tree) signalPass(r *proc.Scanner, sig unix.Signal) (added, sent int, firstErr error) {
	if t.hold != nil {
		t.hold.Lock()
		defer t.hold.Unlock()
	}
	snap, err := r.Snapshot()
	if err != nil {
		return 0, 0, err
	}
	added, _ = t.refresh(r, snap, walkTrack)
	live := t.liveMembers()
	sent, firstErr = t.signalMembers(live, sig)
	if needsCont(sig) {
		for _, m := range live {
			if m.stopped {
				m.signal(unix.SIGCONT)
			}
		}
	}
	return added, sent, firstErr
}
