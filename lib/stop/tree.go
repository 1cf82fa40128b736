package stop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/tether-sh/tether/lib/proc"
	"golang.org/x/sys/unix"
)

// Tuning of the tree walk.
const (
	// treeRescan bounds how long a fork by a live member can go unnoticed
	// while a step waits.
	treeRescan = 20 * time.Millisecond
	// freezeLimit bounds one freeze. A member that cannot stop (stuck in
	// uninterruptible sleep, or the parent of a vfork child we stopped
	// before it could exec) would otherwise hold the freeze forever; past
	// the limit the step signals what it found and later rescans catch up.
	freezeLimit = 500 * time.Millisecond
	// stopPoll is the pause between freeze rounds while SIGSTOPs land; it
	// leaves the CPU to the processes that have to run to stop.
	stopPoll = time.Millisecond
)

// Tree is a Target for a process and every descendant it has or gains,
// including descendants that moved to another process group or session,
// and descendants re-parented away after their parent died: a member stays
// a member, tracked through its pidfd, until it is gone.
//
// Each Signal first freezes the tree: it sends SIGSTOP to every member it
// finds and walks /proc again until a walk finds no new member while every
// member was already seen stopped in the walk before — a stopped process
// cannot fork, so the set is closed. Only then is the step's signal sent to
// every member, followed by SIGCONT (unless the signal is KILL or STOP) so
// that a member can handle it: a signal sent to a stopped process stays
// pending until the process is continued.
//
// Known limit (the kernel offers nothing better without cgroups or
// ptrace): between steps the members run. A member that catches or ignores
// the signal, forks, and exits before the next rescan (treeRescan) leaves
// a child re-parented to init or to a subreaper, where the walk no longer
// finds it. Inside a subreaper that is an ancestor of the tree (reap, and
// NewDescendants) nothing escapes: orphans come back to the caller.
//
// Use NewTree for stopbounded --tree, NewDescendants for everything the
// caller started.
type Tree struct {
	// Name labels the target in messages; "process tree N" when empty.
	Name string

	rootPID  int
	self     int  // the calling process: never a member
	seedSelf bool // walk from the caller itself (NewDescendants)

	mu      sync.Mutex
	members map[int]*member // the current member per PID
	all     []*member       // every process ever found, in discovery order
	killing bool            // the current step is KILL: newcomers are killed at once
}

// member is one process found in the tree.
type member struct {
	id      proc.ID
	h       *proc.Handle // nil when gone at discovery or no descriptor was left
	gone    bool
	stopped bool // seen stopped (T or t) in the latest walk
	sent    []unix.Signal
}

// walkMode says what refresh does to a newly found member.
type walkMode int

const (
	walkTrack walkMode = iota // only track it
	walkStop                  // SIGSTOP it (freeze)
	walkKill                  // SIGKILL it (a KILL step is under way)
)

// NewTree returns the tree rooted at id: the process and all its
// descendants. A root that is already gone yields a Tree that is gone (its
// former children were re-parented away and can no longer be told apart).
// It refuses, with an error wrapping proc.ErrUnsafe, a root that must
// never be signalled (PID ≤ 1) or whose tree contains the calling process
// (the caller itself or one of its ancestors): stopping it would stop the
// caller mid-way.
func NewTree(id proc.ID, name string) (*Tree, error) {
	if err := proc.CheckTarget(id.PID); err != nil {
		return nil, err
	}
	t := &Tree{Name: name, rootPID: id.PID, self: os.Getpid(), members: map[int]*member{}}
	h, err := proc.Open(id)
	switch {
	case errors.Is(err, proc.ErrGone):
		return t, nil
	case err != nil:
		return nil, err
	}
	if err := checkNotAncestor(h.ID()); err != nil {
		h.Close()
		return nil, err
	}
	m := &member{id: h.ID(), h: h}
	t.members[id.PID] = m
	t.all = append(t.all, m)
	return t, nil
}

// NewDescendants returns the Tree of every descendant of the calling
// process, the caller excluded. It is meant for a child subreaper (reap,
// ledger run): every process the caller started, however it forked or
// moved, stays its descendant until it is reaped.
func NewDescendants(name string) *Tree {
	self := os.Getpid()
	return &Tree{Name: name, rootPID: self, self: self, seedSelf: true, members: map[int]*member{}}
}

// checkNotAncestor refuses a root that is the parent, grandparent, … of the
// calling process.
func checkNotAncestor(root proc.ID) error {
	// An ancestor that exits mid-walk re-parents us; start over then.
	for attempt := 0; attempt < 3; attempt++ {
		pid, broken := os.Getppid(), false
		for steps := 0; pid > 1 && steps < 1<<16; steps++ {
			st, err := proc.ReadStat(pid)
			if err != nil {
				broken = true
				break
			}
			if pid == root.PID && st.Start == root.Start {
				return fmt.Errorf("%w process tree %d: it contains this process (pid %d)", proc.ErrUnsafe, root.PID, os.Getpid())
			}
			pid = st.PPID
		}
		if !broken {
			return nil
		}
	}
	return nil
}

// Label implements Target.
func (t *Tree) Label() string {
	switch {
	case t.Name != "":
		return t.Name
	case t.seedSelf:
		return fmt.Sprintf("descendants of pid %d", t.self)
	}
	return fmt.Sprintf("process tree %d", t.rootPID)
}

// snapshot is one pass over /proc.
type snapshot struct {
	stats map[int]proc.Stat
	kids  map[int][]int
}

func takeSnapshot() (*snapshot, error) {
	s := &snapshot{stats: make(map[int]proc.Stat, 512), kids: make(map[int][]int, 512)}
	err := proc.Scan(func(st proc.Stat) {
		s.stats[st.PID] = st
		s.kids[st.PPID] = append(s.kids[st.PPID], st.PID)
	})
	return s, err
}

// refresh updates the members from snap: it marks the ones that went, adds
// every new descendant of a live member (and of the caller, for
// NewDescendants), treating each newcomer as mode says. It reports how many
// were added and whether every live member was seen stopped. t.mu is held.
func (t *Tree) refresh(snap *snapshot, mode walkMode) (added int, allStopped bool) {
	type node struct {
		pid   int
		start uint64
	}
	var queue []node
	if t.seedSelf {
		if st, ok := snap.stats[t.self]; ok {
			queue = append(queue, node{t.self, st.Start})
		}
	}
	for pid, m := range t.members {
		if m.gone {
			continue
		}
		st, ok := snap.stats[pid]
		if !ok || st.Start != m.id.Start || st.Exited() {
			m.gone = true
			continue
		}
		m.stopped = st.Stopped()
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
		for _, c := range snap.kids[n.pid] {
			if c == t.self || c <= 1 || visited[c] {
				continue
			}
			st := snap.stats[c]
			if st.Start < n.start {
				continue // a child never starts before its parent: stale PPID of a recycled PID
			}
			if m := t.members[c]; m != nil && m.id.Start == st.Start {
				if !m.gone {
					queue = append(queue, node{c, st.Start})
				}
				continue
			}
			m := t.add(st, mode)
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

// add makes a member of the process st describes. t.mu is held.
func (t *Tree) add(st proc.Stat, mode walkMode) *member {
	m := &member{id: proc.ID{PID: st.PID, Start: st.Start}, stopped: st.Stopped()}
	if st.Exited() {
		// A zombie its parent never reaped: gone, but found (reap reports it).
		m.gone = true
	} else {
		h, err := proc.Open(m.id)
		switch {
		case err == nil:
			m.h = h
		case errors.Is(err, proc.ErrGone):
			m.gone = true
		default:
			// Out of descriptors, most likely: signal through kill(2)
			// after an identity check instead.
		}
	}
	if !m.gone {
		switch mode {
		case walkStop:
			m.signal(unix.SIGSTOP)
		case walkKill:
			if m.signal(unix.SIGKILL) == nil {
				m.sent = append(m.sent, unix.SIGKILL)
			}
		}
	}
	if old := t.members[st.PID]; old != nil && old.h != nil {
		old.h.Close() // its PID was recycled, so it is long gone
		old.h = nil
		old.gone = true
	}
	t.members[st.PID] = m
	t.all = append(t.all, m)
	return m
}

// signal sends sig to one member, never to a process that took its PID.
func (m *member) signal(sig unix.Signal) error {
	if m.gone {
		return fmt.Errorf("pid %d: %w", m.id.PID, proc.ErrGone)
	}
	var err error
	if m.h != nil {
		err = m.h.Signal(sig)
	} else {
		alive, aerr := proc.Alive(m.id)
		switch {
		case aerr != nil:
			err = aerr
		case !alive:
			err = fmt.Errorf("pid %d: %w", m.id.PID, proc.ErrGone)
		default:
			if kerr := unix.Kill(m.id.PID, sig); errors.Is(kerr, unix.ESRCH) {
				err = fmt.Errorf("pid %d: %w", m.id.PID, proc.ErrGone)
			} else if errors.Is(kerr, unix.EPERM) {
				err = fmt.Errorf("pid %d: %w", m.id.PID, proc.ErrPermission)
			} else {
				err = kerr
			}
		}
	}
	if errors.Is(err, proc.ErrGone) {
		m.gone = true
	}
	return err
}

// live reports whether the member still runs, asking its pidfd.
func (m *member) live() bool {
	if !m.gone && m.h != nil && m.h.Gone() {
		m.gone = true
	}
	return !m.gone
}

// liveMembers returns the members that still run. t.mu is held.
func (t *Tree) liveMembers() []*member {
	var live []*member
	for _, m := range t.members {
		if m.live() {
			live = append(live, m)
		}
	}
	return live
}

// freeze stops every member and walks until the set is closed (see Tree)
// or freezeLimit passes. t.mu is held.
func (t *Tree) freeze() error {
	deadline := time.Now().Add(freezeLimit)
	// Members found by an earlier step were continued since: stop them
	// again; the walk below stops the newcomers.
	for _, m := range t.liveMembers() {
		m.signal(unix.SIGSTOP)
	}
	closedBefore := false // every member was seen stopped in the previous walk
	for {
		snap, err := takeSnapshot()
		if err != nil {
			return err
		}
		added, allStopped := t.refresh(snap, walkStop)
		if added == 0 && closedBefore {
			return nil
		}
		if len(t.liveMembers()) == 0 || time.Now().After(deadline) {
			return nil
		}
		closedBefore = added == 0 && allStopped
		if !allStopped {
			time.Sleep(stopPoll)
		}
	}
}

// Signal freezes the tree, sends sig to every member, and continues them
// unless sig is KILL or STOP. It returns an error wrapping proc.ErrGone
// when no member is left, or the first error when none could be signalled.
func (t *Tree) Signal(sig unix.Signal) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.killing = sig == unix.SIGKILL
	if err := t.freeze(); err != nil {
		return err
	}
	live := t.liveMembers()
	// Signal in PID order so that repeated runs behave alike.
	slices.SortFunc(live, func(a, b *member) int { return a.id.PID - b.id.PID })
	sent := 0
	var firstErr error
	for _, m := range live {
		err := m.signal(sig)
		switch {
		case err == nil:
			sent++
			m.sent = append(m.sent, sig)
		case !errors.Is(err, proc.ErrGone) && firstErr == nil:
			firstErr = err
		}
	}
	if sig != unix.SIGKILL && sig != unix.SIGSTOP {
		for _, m := range live {
			m.signal(unix.SIGCONT)
		}
	}
	if sent == 0 {
		if firstErr != nil {
			return firstErr
		}
		return fmt.Errorf("%s: %w", t.Label(), proc.ErrGone)
	}
	return nil
}

// Sweep walks /proc once, tracking new descendants of live members (and
// killing them at once during a KILL step), and returns the IDs of the
// members still running.
func (t *Tree) Sweep() ([]proc.ID, error) {
	live, err := t.sweep()
	ids := make([]proc.ID, len(live))
	for i, m := range live {
		ids[i] = m.id
	}
	slices.SortFunc(ids, func(a, b proc.ID) int { return a.PID - b.PID })
	return ids, err
}

func (t *Tree) sweep() ([]*member, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	snap, err := takeSnapshot()
	if err != nil {
		return nil, err
	}
	mode := walkTrack
	if t.killing {
		mode = walkKill
	}
	t.refresh(snap, mode)
	return t.liveMembers(), nil
}

// Gone implements Target: no member runs and no new descendant appeared.
func (t *Tree) Gone() bool {
	live, err := t.sweep()
	return err == nil && len(live) == 0
}

// Wait implements Target. It watches every member's pidfd and walks /proc
// again whenever one goes, and every treeRescan, so that children forked
// meanwhile become members before their parent can exit.
func (t *Tree) Wait(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	exited := make(chan struct{}, 1)
	watched := map[*member]bool{}
	tick := time.NewTicker(treeRescan)
	defer tick.Stop()
	for {
		live, err := t.sweep()
		if err != nil {
			return err
		}
		if len(live) == 0 {
			return nil
		}
		for _, m := range live {
			if watched[m] || m.h == nil {
				continue // without a pidfd the tick notices it
			}
			watched[m] = true
			wg.Add(1)
			go func(h *proc.Handle) {
				defer wg.Done()
				if h.Wait(ctx) == nil {
					select {
					case exited <- struct{}{}:
					default:
					}
				}
			}(m.h)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-exited:
		case <-tick.C:
		}
	}
}

// Found returns every process found in the tree so far, zombies included,
// sorted by PID.
func (t *Tree) Found() []proc.ID {
	t.mu.Lock()
	defer t.mu.Unlock()
	ids := make([]proc.ID, len(t.all))
	for i, m := range t.all {
		ids[i] = m.id
	}
	slices.SortFunc(ids, func(a, b proc.ID) int { return a.PID - b.PID })
	return slices.Compact(ids)
}

// Killed returns the members that outlived an earlier signal and were sent
// KILL while still running.
func (t *Tree) Killed() []proc.ID {
	t.mu.Lock()
	defer t.mu.Unlock()
	var ids []proc.ID
	for _, m := range t.all {
		if i := slices.Index(m.sent, unix.SIGKILL); i > 0 {
			ids = append(ids, m.id)
		}
	}
	slices.SortFunc(ids, func(a, b proc.ID) int { return a.PID - b.PID })
	return ids
}

// Close releases every member's pidfd.
func (t *Tree) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range t.all {
		if m.h != nil {
			m.h.Close()
		}
	}
	return nil
}
