package runner

import (
	"errors"
	"slices"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// reaper is the one owner of wait4 in the process.
type reaper struct {
	child       int
	childStatus chan syscall.WaitStatus // receives the command's status once
	done        chan struct{}           // closed when no child is left

	// hold is taken around each reap; the leftover walk holds it to
	// signal our children by PID without a pidfd (see stop.NewDescendants).
	hold sync.Mutex

	mu       sync.Mutex
	counting bool  // the leftover cleanup has begun
	after    []int // PIDs reaped since
}

func startReaper(child int) *reaper {
	r := &reaper{child: child, childStatus: make(chan syscall.WaitStatus, 1), done: make(chan struct{})}
	go r.loop()
	return r
}

func (r *reaper) loop() {
	defer close(r.done)
	for {
		// Learn which child is a zombie without reaping it, then reap it
		// under hold. __WALL: also children whose exit signal is not
		// SIGCHLD (clone).
		var info unix.Siginfo
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOWAIT|unix.WALL, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			// ECHILD: as subreaper, no child means no descendant at all.
			return
		}
		r.hold.Lock()
		var ws unix.WaitStatus
		pid, err := unix.Wait4(siginfoPID(&info), &ws, unix.WNOHANG|unix.WALL, nil)
		r.hold.Unlock()
		if err != nil || pid <= 0 {
			continue
		}
		r.mu.Lock()
		if pid == r.child {
			r.childStatus <- syscall.WaitStatus(ws)
		} else if r.counting {
			r.after = append(r.after, pid)
		}
		r.mu.Unlock()
	}
}

func (r *reaper) isDone() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// countFromNow starts recording what is reaped: the leftovers that one
// walk or another never saw alive.
func (r *reaper) countFromNow() {
	r.mu.Lock()
	r.counting = true
	r.mu.Unlock()
}

func (r *reaper) reapedAfter() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.after)
}

// siginfoPID returns si_pid from a waitid result: the first field of the
// union that follows three ints (si_signo, si_errno, si_code), which the
// kernel aligns to a pointer: offset 16 on 64-bit, 12 on 32-bit.
func siginfoPID(info *unix.Siginfo) int {
	off := uintptr(12)
	if unsafe.Sizeof(uintptr(0)) == 8 {
		off = 16
	}
	return int(*(*int32)(unsafe.Add(unsafe.Pointer(info), off)))
}

// siginfoStatus returns si_status from a waitid result: it follows si_pid
// and si_uid, two 32-bit fields.
func siginfoStatus(info *unix.Siginfo) int {
	off := uintptr(12)
	if unsafe.Sizeof(uintptr(0)) == 8 {
		off = 16
	}
	return int(*(*int32)(unsafe.Add(unsafe.Pointer(info), off+8)))
}
