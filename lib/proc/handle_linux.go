package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Handle watches and signals one process. It is safe for use by several
// goroutines.
type Handle struct {
	id ID
	// f wraps a non-blocking pidfd registered with the runtime poller; nil
	// when the kernel has no pidfd and the handle polls /proc instead.
	f *os.File

	mu   sync.Mutex
	gone bool
}

// pidfdUnsupported is set once pidfd_open reports ENOSYS.
var (
	pidfdOnce        sync.Once
	pidfdUnsupported bool
)

// havePidfd reports whether the kernel supports pidfd_open.
func havePidfd() bool {
	pidfdOnce.Do(func() {
		fd, err := unix.PidfdOpen(os.Getpid(), unix.PIDFD_NONBLOCK)
		if err != nil {
			pidfdUnsupported = errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM)
			return
		}
		unix.Close(fd)
	})
	return !pidfdUnsupported
}

// Open returns a handle on the process id names. If id.Start is zero the
// process's current start time is filled in. A process that no longer
// exists, has exited, or has a different start time yields ErrGone.
func Open(id ID) (*Handle, error) {
	if id.PID < 1 || id.PID > MaxPID {
		return nil, fmt.Errorf("%w: %d", ErrBadID, id.PID)
	}
	if !havePidfd() {
		cur, err := Lookup(id.PID)
		if err != nil {
			return nil, err
		}
		if id.Start != 0 && cur.Start != id.Start {
			return nil, fmt.Errorf("pid %d: start time %d differs from %d: %w", id.PID, cur.Start, id.Start, ErrGone)
		}
		return &Handle{id: cur}, nil
	}
	fd, err := unix.PidfdOpen(id.PID, unix.PIDFD_NONBLOCK)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return nil, fmt.Errorf("pid %d: %w", id.PID, ErrGone)
		}
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
			// Not a thread-group leader: a thread id is not a process
			// (EINVAL before Linux 6.9, ENOENT since).
			return nil, fmt.Errorf("%w: %d is a thread, not a process", ErrBadID, id.PID)
		}
		return nil, fmt.Errorf("pidfd_open %d: %w", id.PID, err)
	}
	// The pidfd names whatever process had the PID at open time. Read its
	// start time, then prove it is still that process: if it is alive now,
	// it held the PID throughout, so the stat we read was its own.
	st, serr := ReadStat(id.PID)
	if serr == nil && pidfdAlive(fd) {
		if id.Start != 0 && st.Start != id.Start {
			unix.Close(fd)
			return nil, fmt.Errorf("pid %d: start time %d differs from %d: %w", id.PID, st.Start, id.Start, ErrGone)
		}
		h := &Handle{id: ID{PID: id.PID, Start: st.Start}, f: os.NewFile(uintptr(fd), "pidfd:"+strconv.Itoa(id.PID))}
		if h.pidfdReadable() {
			// Already exited (e.g. a zombie whose threads are all gone).
			h.Close()
			return nil, fmt.Errorf("pid %d: %w", id.PID, ErrGone)
		}
		return h, nil
	}
	unix.Close(fd)
	if serr != nil && !errors.Is(serr, ErrGone) {
		return nil, serr
	}
	return nil, fmt.Errorf("pid %d: %w", id.PID, ErrGone)
}

// pidfdAlive reports whether the process pidfd fd refers to has not
// exited, by sending it signal 0. A process the caller may not signal
// answers EPERM, which proves it alive just as well (an exited one
// answers ESRCH): it must not be taken for gone.
func pidfdAlive(fd int) bool {
	err := unix.PidfdSendSignal(fd, 0, nil, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// ID returns the identity the handle was opened for, start time included.
func (h *Handle) ID() ID { return h.id }

// Close releases the pidfd.
func (h *Handle) Close() error {
	if h.f != nil {
		return h.f.Close()
	}
	return nil
}

func (h *Handle) markGone() {
	h.mu.Lock()
	h.gone = true
	h.mu.Unlock()
}

// pidfdReadable polls the pidfd without blocking: it is readable once the
// whole thread group has exited.
func (h *Handle) pidfdReadable() bool {
	rc, err := h.f.SyscallConn()
	if err != nil {
		return false
	}
	ready := false
	rc.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			n, err := unix.Poll(fds, 0)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			ready = err == nil && n > 0 && fds[0].Revents&(unix.POLLIN|unix.POLLHUP|unix.POLLERR) != 0
			return
		}
	})
	return ready
}

// Gone reports, without blocking, whether the process has exited.
func (h *Handle) Gone() bool {
	h.mu.Lock()
	g := h.gone
	h.mu.Unlock()
	if g {
		return true
	}
	var gone bool
	if h.f != nil {
		gone = h.pidfdReadable()
	} else {
		alive, err := Alive(h.id)
		gone = err == nil && !alive
	}
	if gone {
		h.markGone()
	}
	return gone
}

// Signal sends sig to the process, never to a process that recycled its
// PID. It refuses PID 1 and the calling process (ErrUnsafe). A process that
// has exited yields ErrGone; missing permission yields ErrPermission.
func (h *Handle) Signal(sig unix.Signal) error {
	if err := checkSafePID(h.id.PID); err != nil {
		return err
	}
	// Signalling a zombie succeeds but reaches nobody; report it as gone.
	if h.Gone() {
		return fmt.Errorf("pid %d: %w", h.id.PID, ErrGone)
	}
	var err error
	if h.f != nil {
		rc, cerr := h.f.SyscallConn()
		if cerr != nil {
			return fmt.Errorf("pid %d: %w", h.id.PID, ErrGone)
		}
		cerr = rc.Control(func(fd uintptr) {
			err = unix.PidfdSendSignal(int(fd), sig, nil, 0)
		})
		if cerr != nil {
			return fmt.Errorf("pid %d: %w", h.id.PID, ErrGone)
		}
	} else {
		// Without pidfd there is a window between this check and kill(2);
		// it is the best the kernel allows.
		alive, aerr := Alive(h.id)
		if aerr != nil {
			return aerr
		}
		if !alive {
			return fmt.Errorf("pid %d: %w", h.id.PID, ErrGone)
		}
		err = unix.Kill(h.id.PID, sig)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ESRCH):
		h.markGone()
		return fmt.Errorf("pid %d: %w", h.id.PID, ErrGone)
	case errors.Is(err, unix.EPERM):
		return fmt.Errorf("pid %d: %w", h.id.PID, ErrPermission)
	}
	return fmt.Errorf("signal pid %d: %w", h.id.PID, err)
}

// fallbackPoll is how often a handle without pidfd re-reads /proc.
const fallbackPoll = 5 * time.Millisecond

// Wait blocks until the process is gone (nil) or ctx is done (ctx.Err()).
// With a pidfd it wakes within the runtime poller's latency of the exit.
func (h *Handle) Wait(ctx context.Context) error {
	if h.Gone() {
		return nil
	}
	if h.f == nil {
		t := time.NewTicker(fallbackPoll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-t.C:
				if h.Gone() {
					return nil
				}
			}
		}
	}
	rc, err := h.f.SyscallConn()
	if err != nil {
		return err
	}
	// Each Wait owns the read deadline while it runs; a cancelled context
	// wakes the poller by moving the deadline into the past.
	if err := h.f.SetReadDeadline(time.Time{}); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { h.f.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	err = rc.Read(func(fd uintptr) bool {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, perr := unix.Poll(fds, 0)
		return perr == nil && n > 0
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	h.markGone()
	return nil
}

// WaitAll blocks until every handle is gone (nil) or ctx is done. With
// anyOne set, it returns as soon as one is gone.
func WaitAll(ctx context.Context, hs []*Handle, anyOne bool) error {
	if len(hs) == 0 {
		return nil
	}
	if len(hs) == 1 {
		return hs[0].Wait(ctx)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, len(hs))
	for _, h := range hs {
		go func() { done <- h.Wait(ctx) }()
	}
	remaining := len(hs)
	var firstErr error
	for remaining > 0 {
		err := <-done
		remaining--
		if err == nil && anyOne {
			return nil
		}
		if err != nil && firstErr == nil {
			firstErr = err
			cancel()
		}
	}
	return firstErr
}

// PollEach blocks the calling thread in poll(2) on the handles' pidfds and
// calls gone(i) once for each handle as its process exits, until every
// handle is gone or gone returns true (done = true), or timeout passes
// (done = false; a negative timeout never passes). It is the shortest path
// from a death to the caller — no runtime poller, no goroutine hand-off —
// for a caller that has nothing else to do while it waits. Handles without
// a pidfd (old kernels) are polled through /proc every few milliseconds.
func PollEach(hs []*Handle, timeout time.Duration, gone func(i int) (stop bool)) (done bool, err error) {
	fds := make([]unix.PollFd, len(hs))
	left := len(hs)
	noPidfd := 0
	for i, h := range hs {
		fds[i].Fd = -1 // poll ignores negative fds
		if h.f == nil {
			noPidfd++
			continue
		}
		rc, err := h.f.SyscallConn()
		if err != nil {
			return false, err
		}
		rc.Control(func(fd uintptr) { fds[i] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN} })
	}
	var deadline time.Time
	if timeout >= 0 {
		deadline = time.Now().Add(timeout)
	}
	settled := make([]bool, len(hs))
	settle := func(i int) bool {
		settled[i] = true
		hs[i].markGone()
		left--
		return gone(i)
	}
	for left > 0 {
		// Handles without a pidfd are checked before every wait, and the
		// wait is cut short so that they are checked again soon.
		if noPidfd > 0 {
			for i, h := range hs {
				if !settled[i] && h.f == nil && h.Gone() {
					noPidfd--
					if settle(i) {
						return true, nil
					}
				}
			}
			if left == 0 {
				break
			}
		}
		ms := -1
		if timeout >= 0 {
			rem := time.Until(deadline)
			if rem <= 0 {
				return false, nil
			}
			ms = int((rem + time.Millisecond - 1) / time.Millisecond)
		}
		if noPidfd > 0 && (ms < 0 || ms > int(fallbackPoll/time.Millisecond)) {
			ms = int(fallbackPoll / time.Millisecond)
		}
		n, err := unix.Poll(fds, ms)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return false, err
		}
		if n == 0 {
			continue // the deadline check above decides
		}
		for i := range fds {
			if fds[i].Fd >= 0 && fds[i].Revents != 0 {
				fds[i].Fd = -1
				if settle(i) {
					return true, nil
				}
			}
		}
	}
	return true, nil
}
