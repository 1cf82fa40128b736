package stop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/proc"
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
	// freezeGiveUp bounds a freeze that keeps finding new members.
	freezeGiveUp = 10 * time.Second
	// repeatLimit bounds one step of a NewDescendants tree that keeps
	// finding new members (a fork loop that ignores the signal).
	repeatLimit = 100 * time.Millisecond
)

// Tree is a Target for a process and every descendant it has or gains,
// including descendants that moved to another process group or session,
// and descendants re-parented away after their parent died: a member stays
// a member, tracked through its pidfd, until it is gone.
//
// A tree made by NewTree (stopbounded --tree) is frozen before each
// signal: every member found gets SIGSTOP, and /proc is walked again until
// a walk that started once every member had been seen stopped finds no new
// member — a stopped process cannot fork, so the set is closed. Only then
// is the step's signal sent to every member, followed by SIGCONT (unless
// the signal is KILL or STOP) so that a member can handle it: a signal
// sent to a stopped process stays pending until it is continued.
//
// Known limit of NewTree (the kernel offers nothing better without cgroups
// or ptrace): between steps the members run. A member that catches or
// ignores the signal, forks, and exits before the next rescan (treeRescan)
// leaves a child re-parented to init or to a subreaper, where the walk no
// longer finds it. Inside a subreaper that is an ancestor of the tree
// nothing escapes: orphans come back to it, which is why NewDescendants
// needs no freeze.
//
// The walk reads /proc/PID/stat for every process (the PPID links);
// /proc/PID/task/TID/children would be cheaper but needs
// CONFIG_PROC_CHILDREN, which many kernels lack.
type Tree struct {
	// Name labels the target in messages; "pid N" when empty, as for a
	// single process (CONTRACT.md §4).
	Name string
	// Guard, when set, is handed each member's pidfd before the freeze
	// first stops the member, so that the member is continued even if the
	// caller is killed while the tree is frozen. A member the guard could
	// not take is never stopped: the step then fails, and what was frozen
	// is continued.
	Guard *ThawGuard

	// interrupted is set by Interrupt: the freeze under way stops, the
	// tree is continued, and no further signal is sent.
	interrupted atomic.Bool

	rootPID  int
	self     int  // the calling process: never a member
	seedSelf bool // walk from the caller itself (NewDescendants)
	// hold, when set, is taken by the caller's reaping loop around each
	// wait4. While the Tree holds it, a child of the caller cannot be
	// reaped, so its PID cannot be recycled: such members are signalled
	// with kill(2) and need no pidfd.
	hold sync.Locker
	step int // count of Signal calls: a member is signalled once per step

	skip []proc.ID // children of the caller never walked (see Skip)

	mu      sync.Mutex
	members map[int]*member // the current member per PID
	all     []*member       // every process ever found, in discovery order
	killing bool            // the current step is KILL: newcomers are killed at once
	stopErr error           // why a member could not be frozen safely (guard lost)
	// unknown are the processes the last walk could not read (not known
	// as members), and walkErr why the last walk failed: while either is
	// set the tree cannot be judged gone, for those may be members.
	unknown map[int]error
	walkErr error
}

// member is one process found in the tree: an identity-checked pidfd
// (proc.Member) and what the walk knows of it.
type member struct {
	*proc.Member
	stat proc.Stat // as the last walk saw it
	gone bool      // seen exited, or a signal found it gone
	// unjudged is why the last look at it could not tell whether it runs
	// (its stat unreadable, e.g. EMFILE); nil once a look could.
	unjudged error
	stopped  bool // seen stopped (T or t) since the last SIGSTOP
	guardGen int  // the Tree.Guard generation it was handed to; 0: none
	step     int  // the last step that signalled it
	sent     []unix.Signal
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
	// proc.Open validates the id (a thread id is refused) and fills in START.
	h, err := proc.Open(id)
	switch {
	case errors.Is(err, proc.ErrGone):
		return t, nil
	case err != nil:
		return nil, err
	}
	id = h.ID()
	h.Close()
	if err := checkNotAncestor(id); err != nil {
		return nil, err
	}
	r, err := proc.NewScanner()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	st, err := r.Stat(id.PID)
	if err != nil || st.Start != id.Start {
		return t, nil // gone meanwhile
	}
	m := newMember(r, st)
	t.members[id.PID] = m
	t.all = append(t.all, m)
	return t, nil
}

// NewDescendants returns the Tree of every descendant of the calling
// process, the caller excluded. It is meant for a child subreaper (reap,
// ledger run): every process the caller started, however it forked or
// moved, stays its descendant until it is reaped, so nothing can escape
// and no freeze is needed; each step signals every descendant and walks
// again until a walk finds nobody new ("repeat until stable").
//
// hold, if not nil, must be held by the caller's reaping loop around each
// wait4 (take it after waitid(WNOWAIT) reports a zombie, reap, release).
// The Tree then signals the caller's own children with plain kill(2)
// under hold — they cannot be reaped, hence recycled, meanwhile — instead
// of opening a pidfd on each, which is most of the cost with hundreds of
// leftovers.
func NewDescendants(name string, hold sync.Locker) *Tree {
	self := os.Getpid()
	return &Tree{Name: name, rootPID: self, self: self, seedSelf: true, hold: hold, members: map[int]*member{}}
}

// Skip excludes children of the caller, and what they fork, from a
// NewDescendants tree: processes the caller had before it started what
// the tree is for (children inherited through exec). Call it before the
// first walk.
func (t *Tree) Skip(ids []proc.ID) { t.skip = append(t.skip, ids...) }

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
	return fmt.Sprintf("pid %d", t.rootPID)
}

// signal sends sig to one member, never to a process that took its PID.
func (m *member) signal(sig unix.Signal) error {
	if m.gone {
		return fmt.Errorf("pid %d: %w", m.ID().PID, proc.ErrGone)
	}
	err := m.Member.Signal(sig)
	switch {
	case errors.Is(err, proc.ErrGone):
		m.markGone()
	case errors.Is(err, proc.ErrCannotJudge):
		m.unjudged = err
	}
	return err
}

// markGone records that the member is gone and releases its pidfd at
// once: a big tree must not need one descriptor per member ever found.
func (m *member) markGone() {
	m.gone = true
	m.unjudged = nil
	m.Close()
}

// liveMembers returns the members not yet seen gone. t.mu is held.
func (t *Tree) liveMembers() []*member {
	var live []*member
	for _, m := range t.members {
		if !m.gone {
			live = append(live, m)
		}
	}
	return live
}

// Signal sends sig to every member; see Tree for how each kind of tree
// makes sure none is missed. It returns an error wrapping proc.ErrGone when
// no member is left, or the first error when none could be signalled.
func (t *Tree) Signal(sig unix.Signal) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.killing = sig == unix.SIGKILL
	t.step++
	var sent int
	var firstErr error
	if t.seedSelf {
		sent, firstErr = t.signalUntilStable(sig)
	} else {
		var err error
		if sent, firstErr, err = t.signalFrozen(sig); err != nil {
			return err
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

// signalMembers sends sig to each member not yet signalled in this step.
func (t *Tree) signalMembers(ms []*member, sig unix.Signal) (sent int, firstErr error) {
	for _, m := range ms {
		if m.step == t.step {
			continue
		}
		m.step = t.step
		err := m.signal(sig)
		switch {
		case err == nil:
			sent++
			m.sent = append(m.sent, sig)
		case !errors.Is(err, proc.ErrGone) && firstErr == nil:
			firstErr = err
		}
	}
	return sent, firstErr
}

// Sweep walks /proc once, tracking new descendants of live members (and
// killing them at once during a KILL step), and returns the IDs of the
// members still running.
func (t *Tree) Sweep() ([]proc.ID, error) {
	live, err := t.sweep()
	ids := make([]proc.ID, len(live))
	for i, m := range live {
		ids[i] = m.ID()
	}
	slices.SortFunc(ids, func(a, b proc.ID) int { return a.PID - b.PID })
	return ids, err
}

func (t *Tree) sweep() ([]*member, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.hold != nil {
		t.hold.Lock()
		defer t.hold.Unlock()
	}
	r, err := proc.NewScanner()
	if err == nil {
		defer r.Close()
	}
	var snap *proc.Snapshot
	if err == nil {
		snap, err = r.Snapshot()
	}
	if t.walkErr = err; err != nil {
		return nil, err
	}
	mode := walkTrack
	if t.killing {
		mode = walkKill
	}
	t.refresh(r, snap, mode)
	return t.liveMembers(), nil
}

// List walks /proc once, as Sweep does, and returns what the walk saw of
// every live member, sorted by PID: the processes a Signal would reach
// now. It signals nothing; a freeze may still find more (children forked
// after the walk).
func (t *Tree) List() ([]proc.Stat, error) {
	live, err := t.sweep()
	if err != nil {
		return nil, err
	}
	out := make([]proc.Stat, len(live))
	for i, m := range live {
		out[i] = m.stat
	}
	slices.SortFunc(out, func(a, b proc.Stat) int { return a.PID - b.PID })
	return out, nil
}

// Gone implements Target: no member runs, no new descendant appeared, and
// the walk could read every process (an unreadable one may be a member).
func (t *Tree) Gone() bool {
	live, err := t.sweep()
	return err == nil && len(live) == 0 && !t.hasUnknown()
}

// hasUnknown reports whether the last walk left processes it could not
// read.
func (t *Tree) hasUnknown() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.unknown) > 0
}

// Unjudged returns the processes the last walk could not judge, sorted by
// PID — members whose stat was unreadable, and unreadable processes that
// may be members — and why; a walk that failed altogether yields no IDs
// and its error. Empty when the last walk saw everything it needed.
func (t *Tree) Unjudged() ([]proc.ID, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var ids []proc.ID
	var why error
	for _, m := range t.members {
		if !m.gone && m.unjudged != nil {
			ids = append(ids, m.ID())
			why = m.unjudged
		}
	}
	for pid, err := range t.unknown {
		ids = append(ids, proc.ID{PID: pid})
		why = err
	}
	if t.walkErr != nil {
		why = t.walkErr
	}
	slices.SortFunc(ids, func(a, b proc.ID) int { return a.PID - b.PID })
	return ids, why
}

// Wait implements Target. It polls the live members' pidfds and walks
// /proc again whenever one goes, and every treeRescan, so that children
// forked meanwhile become members before their parent can exit.
func (t *Tree) Wait(ctx context.Context) error {
	var fds []unix.PollFd
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		live, err := t.sweep()
		if err != nil {
			return err
		}
		if len(live) == 0 && !t.hasUnknown() {
			return nil
		}
		fds = fds[:0]
		for _, m := range live {
			if fd := m.Pidfd(); fd >= 0 { // without a pidfd the next walk notices it
				fds = append(fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
			}
		}
		wait := treeRescan
		if dl, ok := ctx.Deadline(); ok {
			wait = min(wait, time.Until(dl))
		}
		if wait > 0 {
			// One poll over every pidfd: it returns as soon as one exits.
			ms := max(int((wait+time.Millisecond-1)/time.Millisecond), 1)
			if _, err := unix.Poll(fds, ms); err != nil && !errors.Is(err, unix.EINTR) {
				return err
			}
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
		ids[i] = m.ID()
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
			ids = append(ids, m.ID())
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
		m.Close()
	}
	return nil
}
