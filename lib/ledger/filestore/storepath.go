package filestore

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/internal/durable"
	"github.com/tether-sh/tether/lib/ledger"
)

// maxSymlinks bounds the symbolic links followed on the way to a store.
const maxSymlinks = 40

// openStoreDir opens the store directory dir (O_DIRECTORY|O_NOFOLLOW),
// creating it and its missing parents 0700, after checking every folder
// on the way from / down to it (checkAncestor): one that another user
// could write to could swap the store for another folder at any time.
// Each folder is opened relative to the one before it, so what is checked
// is what is used. A symbolic link on the way is followed (it sits in a
// folder already checked, so only you or root could have made it) and the
// walk starts again from / along its target.
//
// A reader (readOnly) creates nothing, and may pass folders owned by
// another user: others lists them (path to uid), for checkAncestors to
// accept only the store's own owner's.
func openStoreDir(dir string, readOnly bool) (fd int, others map[string]uint32, err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return -1, nil, fmt.Errorf("store %s: %w", dir, err)
	}
	if readOnly {
		others = map[string]uint32{}
	}
	for hops := 0; ; hops++ {
		if hops > maxSymlinks {
			return -1, nil, fmt.Errorf("store %s: %w", dir, unix.ELOOP)
		}
		parent, ppath, name, next, err := openParent(abs, dir, others)
		if err != nil {
			return -1, nil, err
		}
		if next != "" {
			abs = next
			continue
		}
		fd, target, err := openStoreAt(parent, ppath, name, dir, readOnly)
		unix.Close(parent)
		if err != nil || target == "" {
			return fd, others, err
		}
		abs = target
	}
}

// openStoreAt opens (or creates) the store name in parent. If name is a
// symbolic link, target is where it points, made absolute.
func openStoreAt(parent int, ppath, name, dir string, readOnly bool) (fd int, target string, err error) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err = unix.Openat(parent, name, flags, 0)
	if err == unix.EACCES && readOnly {
		var st unix.Stat_t
		if unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Uid != uint32(os.Geteuid()) {
			return -1, "", checkReader(dir, &st)
		}
	}
	if err == unix.ENOENT && readOnly {
		return -1, "", fmt.Errorf("%w at %s: it does not exist (only commands that write create one)", ledger.ErrNoStore, dir)
	}
	if err == unix.ENOENT {
		err = unix.Mkdirat(parent, name, 0o700)
		made := err == nil
		if err != nil && err != unix.EEXIST {
			return -1, "", fmt.Errorf("creating store %s: %w", dir, err)
		}
		fd, err = unix.Openat(parent, name, flags, 0)
		if made && err == nil {
			// The umask may have cleared bits we need; it can never have
			// added any.
			if err := unix.Fchmod(fd, 0o700); err != nil {
				unix.Close(fd)
				return -1, "", fmt.Errorf("creating store %s: %w", dir, err)
			}
			if err := durable.SyncAt(parent, ppath); err != nil {
				unix.Close(fd)
				return -1, "", fmt.Errorf("creating store %s: %w", dir, err)
			}
		}
	}
	if err == unix.ELOOP || err == unix.ENOTDIR {
		if t, ok := symlinkAt(parent, ppath, name); ok {
			return -1, t, nil
		}
		return -1, "", fmt.Errorf("%w: store %s is not a directory", ledger.ErrUnsafeStore, dir)
	}
	if err != nil {
		return -1, "", fmt.Errorf("store %s: %w", dir, err)
	}
	return fd, "", nil
}

// openParent opens the folder that holds abs's last element, walking from
// / and checking every folder on the way, and returns it with its path and
// that last element. Missing folders are created 0700. If the way goes
// through a symbolic link, next is the path to walk instead.
func openParent(abs, dir string, others map[string]uint32) (fd int, path, name, next string, err error) {
	comps := strings.Split(strings.TrimPrefix(abs, "/"), "/")
	fd, err = unix.Open("/", oPath|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, "", "", "", fmt.Errorf("store %s: opening /: %w", dir, err)
	}
	path = "/"
	fail := func(err error) (int, string, string, string, error) {
		unix.Close(fd)
		return -1, "", "", "", err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fail(fmt.Errorf("store %s: %w", dir, &os.PathError{Op: "stat", Path: path, Err: err}))
	}
	if err := checkAncestor(path, dir, &st, others); err != nil {
		return fail(err)
	}
	for i, c := range comps[:len(comps)-1] {
		p := filepath.Join(path, c)
		nfd, err := unix.Openat(fd, c, oPath|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == unix.ENOENT && others != nil {
			return fail(fmt.Errorf("%w at %s: it does not exist (only commands that write create one)", ledger.ErrNoStore, dir))
		}
		if err == unix.ENOENT {
			if err := unix.Mkdirat(fd, c, 0o700); err != nil && err != unix.EEXIST {
				return fail(fmt.Errorf("creating store %s: %w", dir, &os.PathError{Op: "mkdir", Path: p, Err: err}))
			}
			nfd, err = unix.Openat(fd, c, oPath|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		}
		if err == nil {
			err = unix.Fstat(nfd, &st)
			if err != nil {
				unix.Close(nfd)
			}
		}
		if err == unix.ELOOP || err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			if err == nil {
				unix.Close(nfd)
			}
			t, ok := symlinkAt(fd, path, c)
			if !ok {
				return fail(fmt.Errorf("store %s: %w", dir, &os.PathError{Op: "readlink", Path: p, Err: unix.EINVAL}))
			}
			unix.Close(fd)
			return -1, "", "", filepath.Join(append([]string{t}, comps[i+1:]...)...), nil
		}
		if err != nil {
			return fail(fmt.Errorf("store %s: %w", dir, &os.PathError{Op: "open", Path: p, Err: err}))
		}
		unix.Close(fd)
		fd, path = nfd, p
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return fail(fmt.Errorf("store %s: %w", dir, &os.PathError{Op: "open", Path: p, Err: unix.ENOTDIR}))
		}
		if err := checkAncestor(path, dir, &st, others); err != nil {
			return fail(err)
		}
	}
	return fd, path, comps[len(comps)-1], "", nil
}

// symlinkAt returns the absolute target of the symbolic link name in the
// folder dir (at path), or false if name is not a symbolic link.
func symlinkAt(dir int, path, name string) (string, bool) {
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(dir, name, buf)
	if err != nil || n == 0 || n == len(buf) {
		return "", false
	}
	t := string(buf[:n])
	if !filepath.IsAbs(t) {
		t = filepath.Join(path, t)
	}
	return filepath.Clean(t), true
}

// checkAncestor refuses a folder on the way to the store dir that a user
// other than you and root could change: one owned by another user, or
// writable by group or others without the sticky bit. (A sticky folder
// such as /tmp lets others add entries but not rename or remove yours;
// its owner still can, so it too must be yours or root's.) sshd's
// StrictModes applies the same rule to ~/.ssh.
//
// A reader (others not nil) may pass a folder owned by another user, which
// is recorded in others: the store's owner's own folders (its home) are on
// the way to its store, and checkAncestors accepts those only.
func checkAncestor(path, dir string, st *unix.Stat_t, others map[string]uint32) error {
	uid := uint32(os.Geteuid())
	if st.Uid != uid && st.Uid != 0 && others != nil {
		others[path] = st.Uid
	} else if st.Uid != uid && st.Uid != 0 {
		return fmt.Errorf("%w: %s (on the way to store %s) is owned by uid %d, neither you (uid %d) nor root: that user could swap the store", ledger.ErrUnsafeStore, path, dir, st.Uid, uid)
	}
	if st.Mode&0o022 != 0 && st.Mode&unix.S_ISVTX == 0 {
		return fmt.Errorf("%w: %s (on the way to store %s) is writable by group or others (mode %04o) and not sticky: they could swap the store", ledger.ErrUnsafeStore, path, dir, st.Mode&0o7777)
	}
	return nil
}
