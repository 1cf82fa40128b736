package ledger

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// The store's lock: one exclusive flock around every write.

// DefaultLockTimeout is how long a writer waits for the store's lock by
// default before giving up (ErrLockTimeout). Every writer holds the lock
// for a few milliseconds; only a stopped or hung process holds it longer.
const DefaultLockTimeout = 60 * time.Second

// lockWarnAfter is how long a writer waits for the lock before saying so.
const lockWarnAfter = time.Second

// lock takes the store's exclusive flock on a fresh descriptor of its lock
// file (flock locks belong to the open file description, so goroutines of
// one process exclude each other too) and returns the function that
// releases it. (flock(2) directly: github.com/gofrs/flock opens its file
// by path, and nothing in the store is resolved through a path.) A lock
// not free at once is waited for as waitLock says.
func (s *Store) lock() (func(), error) {
	p := s.root.Show(lockName)
	fd, err := unix.Openat(s.root.FD, lockName, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", p, err)
	}
	err = flock(fd, unix.LOCK_EX|unix.LOCK_NB)
	if err == nil {
		return func() { unix.Close(fd) }, nil
	}
	if err != unix.EWOULDBLOCK {
		unix.Close(fd)
		return nil, fmt.Errorf("locking %s: %w", p, err)
	}
	return s.waitLock(fd)
}

// waitLock waits for the lock on fd: after a second it says so through
// the warn callback (naming the holder when /proc/locks does), and it
// gives up after the lock timeout (ErrLockTimeout) having changed nothing.
func (s *Store) waitLock(fd int) (func(), error) {
	done := make(chan error, 1)
	go func() { done <- flock(fd, unix.LOCK_EX) }()
	warn := time.NewTimer(lockWarnAfter)
	defer warn.Stop()
	var limit <-chan time.Time
	if s.lockWait > 0 {
		t := time.NewTimer(s.lockWait)
		defer t.Stop()
		limit = t.C
	}
	for {
		select {
		case err := <-done:
			if err != nil {
				unix.Close(fd)
				return nil, fmt.Errorf("locking %s: %w", s.root.Show(lockName), err)
			}
			return func() { unix.Close(fd) }, nil
		case <-warn.C:
			if s.warn != nil {
				bound := "no time limit"
				if s.lockWait > 0 {
					bound = "giving up after " + s.lockWait.String()
				}
				s.warn(fmt.Sprintf("waiting for the lock of store %s, %s (%s)", s.dir, holderText(fd), bound))
			}
		case <-limit:
			// The waiting flock cannot be interrupted: whoever receives its
			// result releases the lock.
			go func() {
				<-done
				unix.Close(fd)
			}()
			return nil, fmt.Errorf("%w %s, %s, for %v; nothing was changed", ErrLockTimeout, s.root.Show(lockName), holderText(fd), s.lockWait)
		}
	}
}

// holderText names the process holding the lock on the file open as fd.
func holderText(fd int) string {
	if h := lockHolder(fd); h != "" {
		return "held by " + h
	}
	return "held by a process not known here"
}

// flock is flock(2), retried on EINTR.
func flock(fd, how int) error {
	for {
		err := unix.Flock(fd, how)
		if err != unix.EINTR {
			return err
		}
	}
}
