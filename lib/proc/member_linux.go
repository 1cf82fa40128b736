package proc

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Member is one process of a set that is walked and signalled as a whole
// (a tree, the descendants of a subreaper): its identity and a raw pidfd.
// Unlike a Handle it is not registered with the runtime poller and costs
// no second stat parse: a set may have thousands of members, and Handles
// made opening them the bulk of a stop. The zero Member is not usable;
// make one with OpenMember or ChildMember.
type Member struct {
	id ID
	// fd is the pidfd; -1 when the process was gone when found, the kernel
	// has no pidfd, no descriptor was left, or the caller vouches for the
	// PID (a child, see ChildMember).
	fd    int
	child bool
}

// memberFdReserve is how many descriptors OpenMember leaves free for the
// reads of /proc, poll and the rest: a set with more members than free
// descriptors must still be walked, so past that point members go without
// a pidfd rather than leave none for reading /proc.
const memberFdReserve = 16

// OpenMember opens a pidfd on the process a scan by r saw as st, and
// proves that the pidfd names that process: whoever holds the PID when
// pidfd_open runs is the pidfd's process, so its stat is read again and
// must show the same START while the pidfd still answers alive. gone
// reports a process that had exited (an unreaped zombie) or whose PID was
// recycled meanwhile; such a Member is never signalled. Without a pidfd
// (an old kernel, descriptors running out) the Member falls back to
// kill(2) after an identity check, the best the kernel allows.
func OpenMember(r *Scanner, st Stat) (m *Member, gone bool) {
	m = &Member{id: ID{PID: st.PID, Start: st.Start}, fd: -1}
	if st.Exited() {
		// A zombie its parent never reaped: gone, but found (reap reports it).
		return m, true
	}
	fd, err := unix.PidfdOpen(st.PID, 0)
	switch {
	case err == nil:
		if uint64(fd)+memberFdReserve >= r.fdLimit {
			// The lowest free descriptor is this high: too few are left.
			unix.Close(fd)
			return m, false
		}
		cur, rerr := r.Stat(st.PID)
		switch {
		case rerr != nil && !errors.Is(rerr, ErrGone):
			unix.Close(fd) // cannot prove the pidfd's process: go without
			return m, false
		case rerr != nil || cur.Start != st.Start || cur.Exited() || !pidfdAlive(fd):
			unix.Close(fd)
			return m, true
		}
		m.fd = fd
	case errors.Is(err, unix.ESRCH):
		return m, true
	}
	return m, false
}

// ChildMember is a Member for id, a child of the caller that the caller
// does not reap while it signals the Member: a child that is not reaped
// keeps its PID, so the PID cannot name another process, and kill(2)
// needs no pidfd. That saves a pidfd_open per child of a subreaper that
// has hundreds of them.
func ChildMember(id ID) *Member { return &Member{id: id, fd: -1, child: true} }

// ID returns the member's identity.
func (m *Member) ID() ID { return m.id }

// Pidfd returns the member's pidfd, or -1 when it has none.
func (m *Member) Pidfd() int { return m.fd }

// Signal sends sig to the member, never to a process that took its PID:
// through the pidfd, or with kill(2) for a child (see ChildMember) or, on
// a kernel without pidfd, after an identity check. A process that has
// exited yields ErrGone; missing permission yields ErrPermission.
func (m *Member) Signal(sig unix.Signal) error {
	var err error
	switch {
	case m.child:
		err = unix.Kill(m.id.PID, sig)
	case m.fd >= 0:
		err = unix.PidfdSendSignal(m.fd, sig, nil, 0)
	default:
		alive, aerr := Alive(m.id)
		switch {
		case aerr != nil:
			return aerr
		case !alive:
			err = unix.ESRCH
		default:
			err = unix.Kill(m.id.PID, sig)
		}
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ESRCH):
		return fmt.Errorf("pid %d: %w", m.id.PID, ErrGone)
	case errors.Is(err, unix.EPERM):
		return fmt.Errorf("pid %d: %w", m.id.PID, ErrPermission)
	}
	return fmt.Errorf("signal pid %d: %w", m.id.PID, err)
}

// Close releases the pidfd.
func (m *Member) Close() {
	if m.fd >= 0 {
		unix.Close(m.fd)
		m.fd = -1
	}
}
