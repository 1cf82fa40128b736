package stop

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/proc"
)

// Process is a Target for one process, signalled through its pidfd.
type Process struct {
	H    *proc.Handle // nil when the process was already gone
	Name string       // label; "pid N" when empty
	PID  int
}

// NewProcess opens id. A process already gone yields a Target that is gone.
// Other errors (a thread id, an unreadable /proc) are returned.
func NewProcess(id proc.ID, name string) (*Process, error) {
	h, err := proc.Open(id)
	if err != nil && !errors.Is(err, proc.ErrGone) {
		return nil, err
	}
	return &Process{H: h, Name: name, PID: id.PID}, nil
}

func (p *Process) Label() string {
	if p.Name != "" {
		return p.Name
	}
	return fmt.Sprintf("pid %d", p.PID)
}

func (p *Process) Signal(sig unix.Signal) error {
	if p.H == nil {
		return fmt.Errorf("pid %d: %w", p.PID, proc.ErrGone)
	}
	err := p.H.Signal(sig)
	if err == nil && needsCont(sig) {
		p.H.Signal(unix.SIGCONT)
	}
	return err
}

// needsCont reports whether a stop step's signal must be followed by
// SIGCONT: a signal sent to a stopped process stays pending until it is
// continued, and the target would seem to ignore it (systemd does the
// same). KILL needs no CONT, and STOP or CONT must not get one.
func needsCont(sig unix.Signal) bool {
	return sig != unix.SIGKILL && sig != unix.SIGSTOP && sig != unix.SIGCONT && sig != 0
}

func (p *Process) Wait(ctx context.Context) error {
	if p.H == nil {
		return nil
	}
	return p.H.Wait(ctx)
}

func (p *Process) Gone() bool { return p.H == nil || p.H.Gone() }

// Close releases the process handle.
func (p *Process) Close() error {
	if p.H == nil {
		return nil
	}
	return p.H.Close()
}

// groupRescan bounds how long a member that joined the group by setpgid(2),
// rather than by fork of a watched member, can go unnoticed.
const groupRescan = 50 * time.Millisecond

// waitAll is proc.WaitAll; a test makes it fail.
var waitAll = proc.WaitAll

// Group is a Target for a process group: gone when no live member is left.
type Group struct {
	PGID int
	Name string
}

func (g *Group) Label() string {
	if g.Name != "" {
		return g.Name
	}
	return fmt.Sprintf("process group %d", g.PGID)
}

func (g *Group) Signal(sig unix.Signal) error {
	if g.Gone() {
		return fmt.Errorf("process group %d: %w", g.PGID, proc.ErrGone)
	}
	err := proc.SignalGroup(g.PGID, sig)
	if err == nil && needsCont(sig) {
		proc.SignalGroup(g.PGID, unix.SIGCONT)
	}
	return err
}

func (g *Group) Gone() bool {
	ids, err := proc.GroupMembers(g.PGID)
	return err == nil && len(ids) == 0
}

// Wait watches every member through its pidfd and rescans the group each
// time one goes: a fork by a watched member is found when its parent exits
// at the latest. A periodic rescan catches members that joined by setpgid.
func (g *Group) Wait(ctx context.Context) error {
	for {
		ids, err := proc.GroupMembers(g.PGID)
		if err != nil {
			return err
		}
		var hs []*proc.Handle
		for _, id := range ids {
			if h, err := proc.Open(id); err == nil {
				hs = append(hs, h)
			}
		}
		if len(hs) == 0 {
			if len(ids) == 0 {
				return nil
			}
			continue // members exited between the scan and the open
		}
		wctx, cancel := context.WithTimeout(ctx, groupRescan)
		err = waitAll(wctx, hs, true)
		cancel()
		for _, h := range hs {
			h.Close()
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return err // not the rescan's timeout: a pidfd that cannot be waited on
		}
	}
}

// Within is a Process that is signalled only if it is Root or one of
// Root's descendants: a harness stops one worker of the supervisor it
// started, and never a process outside that launch that happens to have
// the worker's PID now. Ancestry is checked through the process's pidfd
// (proc.Handle.DescendsFrom) when Within is made, so that a refusal comes
// before anything is signalled, and again right before the first signal.
// Later signals of a schedule go through the same pidfd, hence to the
// same process, even if its parent exits and it is re-parented out of
// Root's tree meanwhile: it was inside when the stop began.
type Within struct {
	*Process
	Root    proc.ID
	checked bool
}

// NewWithin opens id for a stop that is refused unless id is root or
// descends from it; root must carry its START. A process already gone
// yields a Target that is gone. A process outside root's tree is refused
// with an error wrapping proc.ErrOutside.
func NewWithin(root, id proc.ID, name string) (*Within, error) {
	if root.Start == 0 {
		return nil, fmt.Errorf("%w: root %d without its START", proc.ErrBadID, root.PID)
	}
	p, err := NewProcess(id, name)
	if err != nil {
		return nil, err
	}
	w := &Within{Process: p, Root: root}
	if err := w.check(); err != nil && !errors.Is(err, proc.ErrGone) {
		p.Close()
		return nil, err
	}
	return w, nil
}

// check proves that the process is inside Root's tree now.
func (w *Within) check() error {
	if w.H == nil {
		return fmt.Errorf("pid %d: %w", w.PID, proc.ErrGone)
	}
	inside, err := w.H.DescendsFrom(w.Root)
	if err != nil {
		return err
	}
	if !inside {
		why := ""
		if alive, err := proc.Alive(w.Root); err == nil && !alive {
			why = " (which is gone)"
		}
		return fmt.Errorf("refusing %s: %w of pid %s%s", w.Label(), proc.ErrOutside, w.Root, why)
	}
	return nil
}

// Signal checks the ancestry again before the first signal, then signals
// through the pidfd. A process found outside is not signalled: the error
// wraps proc.ErrOutside.
func (w *Within) Signal(sig unix.Signal) error {
	if !w.checked {
		if err := w.check(); err != nil {
			return err
		}
		w.checked = true
	}
	return w.Process.Signal(sig)
}
