package filestore

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/proc"
)

// The store's lock: one exclusive flock around every write.

// DefaultLockTimeout is how long a writer waits for the store's lock by
// default before giving up (ledger.ErrLockTimeout). Every writer holds the lock
// for a few milliseconds; only a stopped or hung process holds it longer.
const DefaultLockTimeout = 60 * time.Second

// lockWarnAfter is how long a writer waits for the lock before saying so.
const lockWarnAfter = time.Second

// lock takes the store's lock (lockFile) and, the first time in a boot,
// makes the links whole (mendLinks) before the caller writes.
func (s *Store) lock() (func(), error) { return s.lockUntil(ledger.ClaimOptions{}) }

// lockUntil is lock for a claim that o.Stop may give up: closed while the
// lock is waited for, or by the time it is taken, it releases what it
// took and returns ledger.ErrClaimStopped; the caller has changed nothing.
func (s *Store) lockUntil(o ledger.ClaimOptions) (func(), error) {
	unlock, err := s.lockFile(o.Stop)
	if err != nil {
		return nil, err
	}
	if err := o.Stopped(); err != nil {
		unlock()
		return nil, err
	}
	s.mendLinks()
	return unlock, nil
}

// lockFile takes the store's exclusive flock on a fresh descriptor of its
// lock file (flock locks belong to the open file description, so
// goroutines of one process exclude each other too) and returns the
// function that releases it. (flock(2) directly: github.com/gofrs/flock
// opens its file by path, and nothing in the store is resolved through a
// path.) A lock not free at once is waited for as waitLock says.
func (s *Store) lockFile(stop <-chan struct{}) (func(), error) {
	p := s.root.Show(lockName)
	if s.foreign {
		// A reader never writes, nor takes the lock: its lock file is
		// 0600 and its owner's alone.
		return nil, fmt.Errorf("%w: %s is owned by uid %d, not by you (uid %d): you may read it, only its owner writes it", ledger.ErrUnsafeStore, s.dir, s.owner, os.Geteuid())
	}
	fd, err := unix.Openat(s.root.FD, lockName, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", p, err)
	}
	if err := keepPrivate(fd, p); err != nil {
		unix.Close(fd)
		return nil, err
	}
	err = flock(fd, unix.LOCK_EX|unix.LOCK_NB)
	if err == nil {
		return func() { unix.Close(fd) }, nil
	}
	if err != unix.EWOULDBLOCK {
		unix.Close(fd)
		return nil, fmt.Errorf("locking %s: %w", p, err)
	}
	if err := foreignHolder(fd, p); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return s.waitLock(fd, stop)
}

// keepPrivate makes the lock file, open as fd, 0600 again should anything
// have opened it to others (chmod -R go+rX on the store, to let others
// read it). Anyone who can open the lock file can flock it, even read-only
// and shared, and so stop every writer of the store; the data files may be
// readable by others, the lock never.
func keepPrivate(fd int, p string) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("locking %s: %w", p, err)
	}
	if st.Mode&0o077 == 0 {
		return nil
	}
	if err := unix.Fchmod(fd, 0o600); err != nil {
		return fmt.Errorf("%w: %s can be opened by others (mode %04o) and cannot be made 0600: %w", ledger.ErrUnsafeStore, p, st.Mode&0o7777, err)
	}
	return nil
}

// foreignHolder refuses at once a lock held by another user's process: one
// that opened the lock file while it was open to others (keepPrivate has
// closed it since). Only the store's owner may write the store, so such a
// holder is never a writer, and waiting for it would only wait out the
// lock timeout. Root is not taken for a stranger.
func foreignHolder(fd int, p string) error {
	holder, comm, ok := proc.FlockHolder(fd)
	if !ok {
		return nil
	}
	fi, err := os.Stat("/proc/" + strconv.Itoa(holder.PID))
	if err != nil {
		return nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Uid == uint32(os.Geteuid()) || st.Uid == 0 {
		// Ours, or root's (who may read any store, and could take any
		// lock anyway).
		return nil
	}
	return fmt.Errorf("%w: %s is held by pid %d (%s) of uid %d, not a writer of this store: it opened the lock file while it was open to others (it is 0600 again); end that process", ledger.ErrUnsafeStore, p, holder.PID, comm, st.Uid)
}

// waitLock waits for the lock on fd: after a second it says so through
// the warn callback (naming the holder when /proc/locks does), and it
// gives up after the lock timeout (ledger.ErrLockTimeout), or once stop is
// closed (ledger.ErrClaimStopped), having changed nothing.
func (s *Store) waitLock(fd int, stop <-chan struct{}) (func(), error) {
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
			giveUp(fd, done)
			return nil, fmt.Errorf("%w %s, %s, for %v; nothing was changed", ledger.ErrLockTimeout, s.root.Show(lockName), holderText(fd), s.lockWait)
		case <-stop:
			giveUp(fd, done)
			return nil, ledger.ErrClaimStopped
		}
	}
}

// giveUp leaves a waiting flock on fd: it cannot be interrupted, so
// whoever receives its result (done) releases the lock.
func giveUp(fd int, done <-chan error) {
	go func() {
		<-done
		unix.Close(fd)
	}()
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
