package filestore

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/ledger"
)

// A reader of a store it does not own: root (as the owner, ReadAsOwner),
// or a member of a group the owner lets read it (checkReader). A reader
// opens the store read-only (OpenExisting), never takes its lock, creates
// nothing; every record it reads was written whole under a
// temporary name and renamed, so each file is complete, and the view is
// consistent file by file, not as a whole.

// checkAncestors refuses, for a reader, a folder on the way to the store
// that belongs to a user other than you, root and the store's owner: that
// user could show you another store in its place.
func (s *Store) checkAncestors(others map[string]uint32) error {
	for path, uid := range others {
		if uid != s.owner && (s.owner == uint32(os.Geteuid()) || s.owner == 0) {
			return fmt.Errorf("%w: %s (on the way to store %s) is owned by uid %d, neither you (uid %d) nor root: that user could swap the store", ledger.ErrUnsafeStore, path, s.dir, uid, os.Geteuid())
		}
		if uid != s.owner {
			return fmt.Errorf("%w: %s (on the way to store %s) is owned by uid %d, neither you (uid %d), root nor the store's owner (uid %d): that user could swap the store", ledger.ErrUnsafeStore, path, s.dir, uid, os.Geteuid(), s.owner)
		}
	}
	return nil
}

// checkReader lets a user other than the store's owner read it (never
// write it): where the store directory, st, grants group read and search
// (chmod g+rX of every file but the lock, or a setgid folder and umask
// 027) to a group the caller
// is in, and is writable by no one but its owner. Root reads another
// user's store as that user instead (ReadAsOwner).
func checkReader(dir string, st *unix.Stat_t) error {
	uid := uint32(os.Geteuid())
	if st.Mode&0o022 != 0 {
		return fmt.Errorf("%w: %s is writable by group or others (mode %04o); its owner must chmod go-w it", ledger.ErrUnsafeStore, dir, st.Mode&0o7777)
	}
	if st.Mode&0o050 != 0o050 || !inGroup(st.Gid) {
		return fmt.Errorf("%w: %s is owned by uid %d, not by you (uid %d), and does not let a group of yours read it (mode %04o, group %d); its owner can open it to a group you are in, every file but the lock: chgrp -R GROUP %s; find %s ! -path %s/lock -exec chmod g+rX {} +", ledger.ErrUnsafeStore, dir, st.Uid, uid, st.Mode&0o7777, st.Gid, dir, dir, dir)
	}
	return nil
}

// inGroup reports whether gid is the caller's effective or a
// supplementary group.
func inGroup(gid uint32) bool {
	if uint32(os.Getegid()) == gid {
		return true
	}
	groups, _ := os.Getgroups()
	for _, g := range groups {
		if uint32(g) == gid {
			return true
		}
	}
	return false
}

// checkOwnedIn is checkOwned for path, an entry of the store's folder d:
// it must be yours, or, in a store another user owns that you read
// (checkReader), that folder's owner's. A writer's folders are all its own
// (Open checks the store directory, openSubdir each folder in it), so for a
// writer this is checkOwned; the extra fstat is paid only by a reader.
func checkOwnedIn(d dirh, path string, st *unix.Stat_t) error {
	if uid := uint32(os.Geteuid()); st.Uid != uid {
		var dst unix.Stat_t
		if err := unix.Fstat(d.FD, &dst); err == nil && dst.Uid != uid && dst.Uid == st.Uid {
			if st.Mode&0o022 != 0 {
				return fmt.Errorf("%w: %s is writable by group or others (mode %04o); chmod go-w it", ledger.ErrUnsafeStore, path, st.Mode&0o7777)
			}
			return nil
		}
	}
	return checkOwned(path, st)
}
