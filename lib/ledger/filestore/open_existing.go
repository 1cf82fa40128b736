package filestore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/tether-sh/tether/lib/ledger"
)

// OpenExisting is Open for a command that only reads: where dir holds no
// store it returns ledger.ErrNoStore instead of creating an empty one, so that a
// mistyped --ledger says so rather than answering "nothing" (CONTRACT.md
// §3.3: commands that only read never create a store).
//
// It opens the store read-only: nothing is created, and a user other than
// the owner may read a store whose directory grants a group of theirs read
// and search (chmod g+rX of every file but the lock). Such a reader never takes the store's lock,
// which is 0600 and the owner's alone (anyone who can open it can stop
// every writer): it reads without it, which is safe because a job's log
// is only appended to and a reader takes whole frames only (a frame being
// appended is not yet one), and every other file is written to a
// temporary name and renamed into place. What it reads is not a
// transaction: a job's summary may be one finish older or newer than its
// latest record, never torn. Any write
// through it is refused (ledger.ErrUnsafeStore). (Root reads another user's store
// as that user instead: ReadAsOwner.)
func OpenExisting(dir string, opts ...Option) (*Store, error) {
	opts = append(opts[:len(opts):len(opts)], func(s *Store) { s.readOnly = true })
	if dir == "" {
		return nil, ledger.BadInputf("empty store directory")
	}
	if _, err := os.Stat(filepath.Join(dir, lockName)); err != nil {
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			// Not ours to judge here: Open says what is wrong.
			return Open(dir, opts...)
		}
		why := "it does not exist"
		if fi, serr := os.Stat(dir); serr == nil && fi.IsDir() {
			why = "the directory holds no ledger"
		} else if serr == nil {
			why = "it is not a directory"
		}
		return nil, fmt.Errorf("%w at %s: %s (only commands that write create one)", ledger.ErrNoStore, dir, why)
	}
	return Open(dir, opts...)
}

// ReadAsOwner lets root's read-only commands (status, check, metrics) read
// a file store another user owns, with that user's rights and no more: where
// the effective uid is 0 and the folder dir is owned by another user, it
// switches the process's effective uid to that user's, its effective gid to
// the folder's group and its supplementary groups to none (every thread:
// Go's set*id calls apply to all of them), and returns the function that
// switches back, to be called once the store is closed. Elsewhere it
// changes nothing and restore does nothing.
//
// Why switch rather than relax Open's checks for root: everything the store
// holds, every folder on the way to it that the owner can change and every
// symbolic link the owner could plant there, is then read with the owner's
// permissions, under the very rules Open applies to the owner (checkOwned,
// checkAncestor, O_NOFOLLOW inside the store). A link planted to /etc/shadow
// or to root's own store reaches only what the owner could read already.
// Nothing is written meanwhile: the caller opens the store with
// OpenExisting and only reads it, and writes its own output (a metrics file)
// after restore, as root. The owner can make its own jobs look however it
// likes; that is its data to report, not a privilege.
func ReadAsOwner(dir string) (restore func() error, err error) {
	restore = func() error { return nil }
	if dir == "" || os.Geteuid() != 0 {
		return restore, nil
	}
	fi, err := os.Stat(dir)
	if err != nil {
		// OpenExisting says what is wrong, as root.
		return restore, nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Uid == 0 {
		return restore, nil
	}
	groups, err := syscall.Getgroups()
	if err != nil {
		return restore, fmt.Errorf("reading store %s as its owner: %w", dir, err)
	}
	egid := os.Getegid()
	back := func() error {
		// Privilege first: only uid 0 may set the groups back.
		if err := syscall.Seteuid(0); err != nil {
			return err
		}
		if err := syscall.Setegid(egid); err != nil {
			return err
		}
		return syscall.Setgroups(groups)
	}
	if err := syscall.Setgroups(nil); err != nil {
		return restore, fmt.Errorf("reading store %s as its owner: setgroups: %w", dir, err)
	}
	if err := syscall.Setegid(int(st.Gid)); err != nil {
		back()
		return restore, fmt.Errorf("reading store %s as its owner: setegid %d: %w", dir, st.Gid, err)
	}
	if err := syscall.Seteuid(int(st.Uid)); err != nil {
		back()
		return restore, fmt.Errorf("reading store %s as its owner: seteuid %d: %w", dir, st.Uid, err)
	}
	return func() error {
		if err := back(); err != nil {
			return fmt.Errorf("store %s: switching back to root after reading it: %w", dir, err)
		}
		return nil
	}, nil
}
