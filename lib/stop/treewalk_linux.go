package stop

import (
	"slices"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/proc"
)

// refresh updates the members from snap: it marks the ones that went, adds
// every new descendant of a live member (and of the caller, for
// NewDescendants), treating each newcomer as mode says. It reports how many
// were added and whether every live member was seen stopped. t.mu is held.
func (t *Tree) refresh(r *proc.Scanner, snap *proc.Snapshot, mode walkMode) (added int, allStopped bool) {
	type node struct {
		pid   int
		start uint64
	}
	var queue []node
	if t.seedSelf {
		if st, ok := snap.Stat(t.self); ok {
			queue = append(queue, node{t.self, st.Start})
		}
	}
	unreadable := snap.Unreadable()
	t.unknown = nil
	for pid, err := range unreadable {
		if m := t.members[pid]; m == nil || m.gone {
			if t.unknown == nil {
				t.unknown = map[int]error{}
			}
			t.unknown[pid] = err
		}
	}
	for pid, m := range t.members {
		if m.gone {
			continue
		}
		if err, bad := unreadable[pid]; bad {
			// Not seen is not gone: only "no such process" is.
			m.unjudged = err
			queue = append(queue, node{pid, m.ID().Start})
			continue
		}
		st, ok := snap.Stat(pid)
		if !ok || st.Start != m.ID().Start || st.Exited() {
			m.markGone()
			continue
		}
		m.unjudged = nil
		m.stopped = st.Stopped()
		m.stat = st
		queue = append(queue, node{pid, st.Start})
	}
	visited := make(map[int]bool, len(queue))
	for len(queue) > 0 {
		n := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if visited[n.pid] {
			continue
		}
		visited[n.pid] = true
		for _, c := range snap.Children(n.pid) {
			if c == t.self || c <= 1 || visited[c] || (t.Guard != nil && c == t.Guard.PID()) {
				continue
			}
			st, _ := snap.Stat(c)
			if n.pid == t.self && slices.Contains(t.skip, proc.ID{PID: c, Start: st.Start}) {
				continue // not the caller's to stop, nor its descendants
			}
			if st.Start < n.start {
				continue // a child never starts before its parent: stale PPID of a recycled PID
			}
			if m := t.members[c]; m != nil && m.ID().Start == st.Start {
				if !m.gone {
					queue = append(queue, node{c, st.Start})
				}
				continue
			}
			m := t.add(r, st, mode)
			added++
			if !m.gone {
				queue = append(queue, node{c, st.Start})
			}
		}
	}
	allStopped = true
	for _, m := range t.members {
		if !m.gone && !m.stopped {
			allStopped = false
		}
	}
	return added, allStopped
}

// add makes a member of the process that snap showed as st, and treats
// it as mode says. t.mu is held.
func (t *Tree) add(r *proc.Scanner, st proc.Stat, mode walkMode) *member {
	var m *member
	if t.hold != nil && st.PPID == t.self && !st.Exited() {
		// Only ever signalled with Tree.hold held, after a walk under it
		// found the child alive with its START: the PID is still its own.
		m = &member{Member: proc.ChildMember(proc.ID{PID: st.PID, Start: st.Start}), stat: st, stopped: st.Stopped()}
	} else {
		m = newMember(r, st)
	}
	if !m.gone {
		switch mode {
		case walkStop:
			t.stop(m)
		case walkKill:
			if m.signal(unix.SIGKILL) == nil {
				m.sent = append(m.sent, unix.SIGKILL)
			}
		}
	}
	if old := t.members[st.PID]; old != nil {
		old.markGone() // its PID was recycled, so it is long gone
	}
	t.members[st.PID] = m
	t.all = append(t.all, m)
	return m
}

// newMember opens the process that a walk by r saw as st.
func newMember(r *proc.Scanner, st proc.Stat) *member {
	pm, gone := proc.OpenMember(r, st)
	return &member{Member: pm, stat: st, gone: gone, stopped: st.Stopped()}
}
