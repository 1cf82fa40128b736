package ledger

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Names inside the store.
const (
	lockName   = "lock"
	execDir    = "exec"
	jobsDir    = "jobs"
	activeDir  = "active"
	latestName = "_latest"
	tmpPrefix  = ".tmp."
	// spareName is the spare file of exec/ and of each jobs/JOB/: the next
	// version of a record (or of _latest) is written into it in place and
	// exchanged with exec/ID (see replaceFile). It starts with tmpPrefix,
	// so every reader skips it and prune deletes it like any leftover.
	spareName = tmpPrefix + "spare"
)

// Store is an open ledger directory. It holds the store's directory and
// its three subdirectories open (Close releases them): every file of the
// store is reached relative to those descriptors, never through a path
// again, so a parent folder renamed or a symbolic link swapped in after
// Open cannot redirect it. A Store is safe for concurrent use by
// goroutines and processes: each write operation takes the store's flock
// on its own descriptor.
type Store struct {
	dir string
	// root is the store's directory; exec, jobs and active its
	// subdirectories, opened once by Open.
	root, exec, jobs, active dirh
	// now is the clock; tests replace it.
	now func() time.Time

	// lockWait bounds the wait for the lock (negative: no bound); warn
	// receives the line said after a second of waiting.
	lockWait time.Duration
	warn     func(msg string)

	// noExchange is set once renameat2(RENAME_EXCHANGE) turned out to be
	// unsupported here; records are then replaced by temp file and rename.
	noExchange atomic.Bool
	// exchange is renameExchange; tests replace it to exercise the fallback.
	exchange func(dirfd int, a, b string) error
}

// dirh is an open directory of the store and the path it is shown by (in
// messages only: nothing is resolved through it).
type dirh struct {
	fd   int
	path string
}

func (d dirh) show(name string) string { return d.path + "/" + name }

// DefaultLockTimeout is how long a writer waits for the store's lock by
// default before giving up (ErrLockTimeout). Every writer holds the lock
// for a few milliseconds; only a stopped or hung process holds it longer.
const DefaultLockTimeout = 60 * time.Second

// lockWarnAfter is how long a writer waits for the lock before saying so.
const lockWarnAfter = time.Second

// ErrLockTimeout: the store's lock was not free within the lock timeout;
// nothing was changed.
var ErrLockTimeout = errors.New("timed out waiting for the store's lock")

// An Option changes how Open opens a store.
type Option func(*Store)

// LockTimeout bounds how long a write waits for the store's lock: d > 0
// gives up after d (ErrLockTimeout), d < 0 waits forever, 0 means
// DefaultLockTimeout.
func LockTimeout(d time.Duration) Option {
	return func(s *Store) {
		if d != 0 {
			s.lockWait = d
		}
	}
}

// LockTimeoutFlag is LockTimeout for a --lock-timeout flag: the default
// bound when the flag was not given, no bound for 0.
func LockTimeoutFlag(given bool, d time.Duration) Option {
	switch {
	case !given:
		return LockTimeout(0)
	case d == 0:
		return LockTimeout(-1)
	}
	return LockTimeout(d)
}

// LockWarn makes fn receive, once per operation, a line saying that the
// operation waits for the lock (and who holds it, when known), after a
// second of waiting. Without it nothing is said.
func LockWarn(fn func(msg string)) Option {
	return func(s *Store) { s.warn = fn }
}

// exchangeUnsupported reports whether err from exchange means the kernel or
// the file system does not offer RENAME_EXCHANGE.
func exchangeUnsupported(err error) bool {
	return err == unix.EINVAL || err == unix.ENOSYS || err == unix.EOPNOTSUPP
}

// crashPoint, when set (by the crash tests only), is called at the named
// points of the write paths that separate two durable steps.
var crashPoint func(name string)

// readHook, when set (by the rotation test only), is called by readSmall
// between opening a file of the store and reading it.
var readHook func(name string)

// readNamesHook, when set (by TestNoScan only), sees every directory the
// store lists, so a test can prove which operations never list the
// directories that grow with the number of executions.
var readNamesHook func(dir string)

func reached(name string) {
	if crashPoint != nil {
		crashPoint(name)
	}
}

// DefaultDir returns the store directory used when no --ledger is given:
// $TETHER_LEDGER if set and not empty, else
// ${XDG_STATE_HOME:-$HOME/.local/state}/tether/ledger.
func DefaultDir() (string, error) {
	if d := os.Getenv("TETHER_LEDGER"); d != "" {
		return d, nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "tether", "ledger"), nil
	}
	home := os.Getenv("HOME")
	if home == "" {
		return "", badInputf("no store: --ledger, $TETHER_LEDGER, $XDG_STATE_HOME and $HOME are all unset")
	}
	return filepath.Join(home, ".local", "state", "tether", "ledger"), nil
}

// ResolveDir returns dir if it is not empty, else DefaultDir().
func ResolveDir(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	return DefaultDir()
}

// Open opens the store in dir, creating it (0700, with its lock file 0600)
// and its missing parents (0700) if it does not exist. It refuses
// (ErrUnsafeStore) a store that is group/other-writable, owned by another
// user, on a network file system, a non-empty directory that is not a
// ledger store, or one whose parent chain another user could change (see
// openStoreDir). The store's directory is opened once, here; every later
// operation is relative to it. Close releases it.
func Open(dir string, opts ...Option) (*Store, error) {
	if dir == "" {
		return nil, badInputf("empty store directory")
	}
	closed := dirh{fd: -1}
	s := &Store{dir: filepath.Clean(dir), now: time.Now, exchange: renameExchange, lockWait: DefaultLockTimeout,
		root: closed, exec: closed, jobs: closed, active: closed}
	for _, o := range opts {
		o(s)
	}
	fd, err := openStoreDir(s.dir)
	if err != nil {
		return nil, err
	}
	s.root = dirh{fd: fd, path: s.dir}
	if err := s.check(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// check checks the opened store directory, initialises it if it is empty,
// and opens its subdirectories.
func (s *Store) check() error {
	var st unix.Stat_t
	if err := unix.Fstat(s.root.fd, &st); err != nil {
		return fmt.Errorf("store %s: %w", s.dir, err)
	}
	if err := checkOwned(s.dir, &st); err != nil {
		return err
	}
	if err := checkFS(s.root); err != nil {
		return err
	}
	var lst unix.Stat_t
	err := unix.Fstatat(s.root.fd, lockName, &lst, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		// An empty directory (made by the user, or a creation cut short) is
		// initialised; anything else is not ours to write into.
		if empty, eerr := dirEmptyOrOurs(s.root); eerr != nil || !empty {
			if eerr != nil {
				return fmt.Errorf("store %s: %w", s.dir, eerr)
			}
			return fmt.Errorf("%w: %s is not empty and is not a ledger store (it has no lock file)", ErrUnsafeStore, s.dir)
		}
		if err := s.init(); err != nil {
			return err
		}
		err = unix.Fstatat(s.root.fd, lockName, &lst, unix.AT_SYMLINK_NOFOLLOW)
	}
	if err != nil {
		return fmt.Errorf("store %s: lock file: %w", s.dir, err)
	}
	if lst.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%w: %s is not a regular file", ErrUnsafeStore, s.root.show(lockName))
	}
	if err := checkOwned(s.root.show(lockName), &lst); err != nil {
		return err
	}
	for _, sub := range []struct {
		name string
		h    *dirh
	}{{execDir, &s.exec}, {jobsDir, &s.jobs}, {activeDir, &s.active}} {
		h, err := openSubdir(s.root, sub.name)
		if errors.Is(err, os.ErrNotExist) {
			return &kindError{kind: ErrCorrupt, msg: fmt.Sprintf("store %s is damaged: it has a lock file but no %s/ directory", s.dir, sub.name)}
		}
		if err != nil {
			return err
		}
		*sub.h = h
	}
	return nil
}

// Close releases the store's directory. The Store must not be used after.
func (s *Store) Close() error {
	for _, h := range []*dirh{&s.exec, &s.jobs, &s.active, &s.root} {
		if h.fd >= 0 {
			unix.Close(h.fd)
			h.fd = -1
		}
	}
	return nil
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// path is the path a file of the store is shown by (in messages and
// tests; the store never resolves it).
func (s *Store) path(elem ...string) string {
	return filepath.Join(append([]string{s.dir}, elem...)...)
}

// openSubdir opens the directory name in d (not following a symbolic
// link) and checks it is a private directory of ours. One that does not
// exist is os.ErrNotExist.
func openSubdir(d dirh, name string) (dirh, error) {
	p := d.show(name)
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == unix.ELOOP || err == unix.ENOTDIR {
		return dirh{fd: -1}, fmt.Errorf("%w: %s is not a directory", ErrUnsafeStore, p)
	}
	if err != nil {
		return dirh{fd: -1}, &os.PathError{Op: "open", Path: p, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return dirh{fd: -1}, &os.PathError{Op: "stat", Path: p, Err: err}
	}
	if err := checkOwned(p, &st); err != nil {
		unix.Close(fd)
		return dirh{fd: -1}, err
	}
	return dirh{fd: fd, path: p}, nil
}

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
func openStoreDir(dir string) (int, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return -1, fmt.Errorf("store %s: %w", dir, err)
	}
	for hops := 0; ; hops++ {
		if hops > maxSymlinks {
			return -1, fmt.Errorf("store %s: %w", dir, unix.ELOOP)
		}
		parent, ppath, name, next, err := openParent(abs, dir)
		if err != nil {
			return -1, err
		}
		if next != "" {
			abs = next
			continue
		}
		fd, target, err := openStoreAt(parent, ppath, name, dir)
		unix.Close(parent)
		if err != nil || target == "" {
			return fd, err
		}
		abs = target
	}
}

// openStoreAt opens (or creates) the store name in parent. If name is a
// symbolic link, target is where it points, made absolute.
func openStoreAt(parent int, ppath, name, dir string) (fd int, target string, err error) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err = unix.Openat(parent, name, flags, 0)
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
			if err := fsyncAt(parent, ppath); err != nil {
				unix.Close(fd)
				return -1, "", fmt.Errorf("creating store %s: %w", dir, err)
			}
		}
	}
	if err == unix.ELOOP || err == unix.ENOTDIR {
		if t, ok := symlinkAt(parent, ppath, name); ok {
			return -1, t, nil
		}
		return -1, "", fmt.Errorf("%w: store %s is not a directory", ErrUnsafeStore, dir)
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
func openParent(abs, dir string) (fd int, path, name, next string, err error) {
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
	if err := checkAncestor(path, dir, &st); err != nil {
		return fail(err)
	}
	for i, c := range comps[:len(comps)-1] {
		p := filepath.Join(path, c)
		nfd, err := unix.Openat(fd, c, oPath|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
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
		if err := checkAncestor(path, dir, &st); err != nil {
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
func checkAncestor(path, dir string, st *unix.Stat_t) error {
	uid := uint32(os.Geteuid())
	if st.Uid != uid && st.Uid != 0 {
		return fmt.Errorf("%w: %s (on the way to store %s) is owned by uid %d, neither you (uid %d) nor root: that user could swap the store", ErrUnsafeStore, path, dir, st.Uid, uid)
	}
	if st.Mode&0o022 != 0 && st.Mode&unix.S_ISVTX == 0 {
		return fmt.Errorf("%w: %s (on the way to store %s) is writable by group or others (mode %04o) and not sticky: they could swap the store", ErrUnsafeStore, path, dir, st.Mode&0o7777)
	}
	return nil
}

// init creates the subdirectories and, last, the lock file, whose presence
// marks a complete store. Concurrent initialisers are harmless: every step
// tolerates "already exists".
func (s *Store) init() error {
	for _, d := range []string{execDir, jobsDir, activeDir} {
		if err := mkdirPrivate(s.root, d); err != nil {
			return fmt.Errorf("creating store %s: %w", s.dir, err)
		}
	}
	if err := fsyncDir(s.root); err != nil {
		return fmt.Errorf("creating store %s: %w", s.dir, err)
	}
	fd, err := unix.Openat(s.root.fd, lockName, unix.O_CREAT|unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("creating store %s: lock file: %w", s.dir, err)
	}
	unix.Fchmod(fd, 0o600)
	unix.Close(fd)
	if err := fsyncDir(s.root); err != nil {
		return fmt.Errorf("creating store %s: %w", s.dir, err)
	}
	return nil
}

// dirEmptyOrOurs reports whether d holds nothing but (some of) the store's
// own entries: a store whose creation was cut short or is under way in
// another process.
func dirEmptyOrOurs(d dirh) (bool, error) {
	f, err := openListing(d)
	if err != nil {
		return false, err
	}
	defer f.Close()
	names, err := f.Readdirnames(8)
	if err != nil && err != io.EOF {
		return false, err
	}
	for _, n := range names {
		// lock too: a concurrent initialiser may have just finished.
		if n != execDir && n != jobsDir && n != activeDir && n != lockName {
			return false, nil
		}
	}
	return true, nil
}

// openListing opens d afresh for reading its entries (a descriptor of its
// own: the offset of d's is shared by every reader).
func openListing(d dirh) (*os.File, error) {
	fd, err := unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: d.path, Err: err}
	}
	return os.NewFile(uintptr(fd), d.path), nil
}

// mkdirPrivate makes the directory name in d 0700, tolerating one that
// already exists.
func mkdirPrivate(d dirh, name string) error {
	err := unix.Mkdirat(d.fd, name, 0o700)
	if errors.Is(err, unix.EEXIST) {
		return nil
	}
	if err != nil {
		return &os.PathError{Op: "mkdir", Path: d.show(name), Err: err}
	}
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: d.show(name), Err: err}
	}
	defer unix.Close(fd)
	return unix.Fchmod(fd, 0o700)
}

// CheckPrivateDir refuses path unless it is a directory (not a symbolic
// link) owned by the effective uid and not writable by group or others:
// what every folder of a store must be (ErrUnsafeStore otherwise).
func CheckPrivateDir(path string) error {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("%w: %s is not a directory", ErrUnsafeStore, path)
	}
	return checkOwned(path, &st)
}

// checkOwned refuses a file or directory not owned by the effective uid, or
// writable by group or others.
func checkOwned(path string, st *unix.Stat_t) error {
	if uid := uint32(os.Geteuid()); st.Uid != uid {
		return fmt.Errorf("%w: %s is owned by uid %d, not by you (uid %d)", ErrUnsafeStore, path, st.Uid, uid)
	}
	if st.Mode&0o022 != 0 {
		return fmt.Errorf("%w: %s is writable by group or others (mode %04o); chmod go-w it", ErrUnsafeStore, path, st.Mode&0o7777)
	}
	return nil
}

// Magic numbers (statfs f_type) of file systems where flock is emulated,
// advisory per client or not coherent across hosts.
var networkFS = map[int64]string{
	0x6969:     "NFS",
	0x517b:     "SMB",
	0xff534d42: "CIFS",
	0xfe534d42: "SMB2",
	0x5346414f: "AFS",
	0x01021997: "9P",
}

// checkFS refuses a store on a network file system.
func checkFS(d dirh) error {
	var fs unix.Statfs_t
	if err := unix.Fstatfs(d.fd, &fs); err != nil {
		return fmt.Errorf("store %s: statfs: %w", d.path, err)
	}
	return checkFSType(d.path, int64(fs.Type))
}

func checkFSType(dir string, magic int64) error {
	if name, ok := networkFS[magic&0xffffffff]; ok {
		return fmt.Errorf("%w: %s is on %s, where flock is not reliable; put the ledger on a local file system", ErrUnsafeStore, dir, name)
	}
	return nil
}

// lock takes the store's exclusive flock on a fresh descriptor of its lock
// file (flock locks belong to the open file description, so goroutines of
// one process exclude each other too) and returns the function that
// releases it. (flock(2) directly: github.com/gofrs/flock opens its file
// by path, and nothing in the store is resolved through a path.) A lock
// not free at once is waited for as waitLock says.
func (s *Store) lock() (func(), error) {
	p := s.root.show(lockName)
	fd, err := unix.Openat(s.root.fd, lockName, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
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
				return nil, fmt.Errorf("locking %s: %w", s.root.show(lockName), err)
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
			return nil, fmt.Errorf("%w %s, %s, for %v; nothing was changed", ErrLockTimeout, s.root.show(lockName), holderText(fd), s.lockWait)
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

// fsyncDir makes the entries of d durable.
func fsyncDir(d dirh) error {
	for {
		err := unix.Fsync(d.fd)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "fsync", Path: d.path, Err: err}
		}
		return nil
	}
}

// fsyncAt fsyncs the directory open as fd (possibly O_PATH) at path.
func fsyncAt(fd int, path string) error {
	dfd, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(dfd)
	return fsyncDir(dirh{fd: dfd, path: path})
}

// writeFile replaces name in d with data through d/.tmp.name and rename,
// so a reader (or a crash) sees the old or the new content. With sync the
// data is fdatasync'ed before the rename; the caller fsyncs d to make the
// rename itself durable. On error the old file is untouched.
func writeFile(d dirh, name string, data []byte, sync bool) error {
	tmp, err := stageFile(d, name, data, sync)
	if err != nil {
		return err
	}
	return tmp.commit()
}

// staged is a temporary file written next to its destination, not yet
// renamed over it.
type staged struct {
	d        dirh
	tmp, dst string
}

// createTemp creates d/.tmp.name afresh (0600, O_EXCL): a stale one (left
// by a crash; the caller holds the lock, so no writer uses it) is removed
// first, never written into, as it may have other links.
func createTemp(d dirh, name string) (staged, int, error) {
	st := staged{d: d, tmp: tmpPrefix + name, dst: name}
	fd, err := createExcl(d, st.tmp)
	if err != nil {
		return st, -1, &os.PathError{Op: "create", Path: d.show(st.tmp), Err: err}
	}
	return st, fd, nil
}

// createExcl creates name in d (0600) with O_EXCL, removing whatever held
// the name before.
func createExcl(d dirh, name string) (int, error) {
	const flags = unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Openat(d.fd, name, flags, 0o600)
	if err == unix.EEXIST {
		if err := unix.Unlinkat(d.fd, name, 0); err != nil && err != unix.ENOENT {
			return -1, err
		}
		fd, err = unix.Openat(d.fd, name, flags, 0o600)
	}
	if err != nil {
		return -1, err
	}
	// The umask may have cleared bits of 0600; it cannot have added any.
	return fd, nil
}

// stageFile writes data to d/.tmp.name (0600), fdatasync'ed if sync.
func stageFile(d dirh, name string, data []byte, sync bool) (staged, error) {
	st, fd, err := createTemp(d, name)
	if err != nil {
		return st, err
	}
	p := d.show(st.tmp)
	fail := func(op string, err error) (staged, error) {
		unix.Close(fd)
		st.abort()
		return st, &os.PathError{Op: op, Path: p, Err: err}
	}
	if err := writeAll(fd, data); err != nil {
		return fail("write", err)
	}
	if sync {
		if err := fdatasync(fd); err != nil {
			return fail("fdatasync", err)
		}
	}
	if err := unix.Close(fd); err != nil {
		st.abort()
		return st, &os.PathError{Op: "close", Path: p, Err: err}
	}
	return st, nil
}

// stageOpen writes data to d/.tmp.name (0600) like stageFile without
// sync, and returns the file still open so that the caller can fdatasync
// it (and must close it).
func stageOpen(d dirh, name string, data []byte) (staged, int, error) {
	st, fd, err := createTemp(d, name)
	if err != nil {
		return st, -1, err
	}
	if err := writeAll(fd, data); err != nil {
		unix.Close(fd)
		st.abort()
		return st, -1, &os.PathError{Op: "write", Path: d.show(st.tmp), Err: err}
	}
	return st, fd, nil
}

// commit renames the staged file over its destination (atomically).
func (st staged) commit() error {
	if err := unix.Renameat(st.d.fd, st.tmp, st.d.fd, st.dst); err != nil {
		st.abort()
		return &os.PathError{Op: "rename", Path: st.d.show(st.tmp), Err: err}
	}
	return nil
}

// commitNew is commit for a destination that must not exist yet: it is
// refused (ErrBadInput), not replaced. Where the file system cannot rename
// without replacing, the caller's check that it does not exist stands.
func (st staged) commitNew() error {
	err := unix.Renameat2(st.d.fd, st.tmp, st.d.fd, st.dst, unix.RENAME_NOREPLACE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EEXIST):
		st.abort()
		return badInputf("execution %s exists already", st.dst)
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS):
		return st.commit()
	}
	st.abort()
	return &os.PathError{Op: "rename", Path: st.d.show(st.tmp), Err: err}
}

// abort removes the staged file.
func (st staged) abort() { unix.Unlinkat(st.d.fd, st.tmp, 0) }

// createEmpty creates the empty marker file name in d (0600); one that
// already exists is fine (nothing is written into it).
func createEmpty(d dirh, name string) error {
	fd, err := unix.Openat(d.fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return &os.PathError{Op: "create", Path: d.show(name), Err: err}
	}
	return unix.Close(fd)
}

// linkMarker makes the index marker name in d a hard link to the staged
// file src (a record's first version, 0600): no inode is allocated. A
// marker that already exists is fine; where src cannot take another link
// (EMLINK, EPERM, EXDEV: some file systems) an empty marker is created
// instead. Nothing ever reads a marker's content.
func linkMarker(src staged, d dirh, name string) error {
	err := unix.Linkat(src.d.fd, src.tmp, d.fd, name, 0)
	switch err {
	case nil, unix.EEXIST:
		return nil
	case unix.EMLINK, unix.EPERM, unix.EXDEV, unix.EOPNOTSUPP:
		return createEmpty(d, name)
	}
	return &os.LinkError{Op: "link", Old: src.d.show(src.tmp), New: d.show(name), Err: err}
}

// writeAll writes data at offset 0 of fd.
func writeAll(fd int, data []byte) error {
	for off := 0; off < len(data); {
		n, err := unix.Pwrite(fd, data[off:], int64(off))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		off += n
	}
	return nil
}

func fdatasync(fd int) error {
	for {
		err := syncData(fd)
		if err != unix.EINTR {
			return err
		}
	}
}

// openSpare opens d/.tmp.spare for writing in place, or creates it. The
// spare is written into only while it is a regular file of ours with no
// other link (a record's first version still linked by its index markers,
// or a hard link planted there or made by a `cp -al` snapshot, is never
// written through): otherwise its name is removed and a fresh file
// created. ok is false if the name holds something that is not a file
// (prune removes it); the caller then uses a temporary file.
func openSpare(d dirh) (fd int, ok bool, err error) {
	fd, err = unix.Openat(d.fd, spareName, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err == nil {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			unix.Close(fd)
			return -1, false, nil
		}
		if st.Nlink == 1 && st.Uid == uint32(os.Geteuid()) {
			if st.Mode&0o7777 != 0o600 {
				unix.Fchmod(fd, 0o600)
			}
			return fd, true, nil
		}
		unix.Close(fd)
		err = unix.EEXIST
	}
	switch err {
	case unix.ENOENT, unix.EEXIST:
		fd, err = createExcl(d, spareName)
	case unix.ELOOP, unix.ENXIO, unix.EISDIR:
		return -1, false, nil
	}
	if err != nil {
		return -1, false, &os.PathError{Op: "open", Path: d.show(spareName), Err: err}
	}
	return fd, true, nil
}

// replaceFile durably makes data the content of name in d (a record, or a
// job's _latest pointer), as atomically as writeFile with sync followed by
// an fsync of d, but mostly without allocating an inode (unless d/name
// does not exist yet: the spare is then renamed to it): data is written in
// place into d/.tmp.spare (see openSpare), which is truncated to its
// length and fdatasync'ed, then exchanged with d/name by
// renameat2(RENAME_EXCHANGE), and d is fsynced. The previous version's
// inode is left under the spare name for the next replacement. Must be
// called with the store lock held (the spare is shared). Where
// RENAME_EXCHANGE is unsupported the spare is renamed over d/name instead,
// and later calls use writeFile.
func (s *Store) replaceFile(d dirh, name string, data []byte) error {
	if s.noExchange.Load() {
		return writeSynced(d, name, data)
	}
	spare := d.show(spareName)
	fd, ok, err := openSpare(d)
	if err != nil {
		return err
	}
	if !ok {
		return writeSynced(d, name, data)
	}
	fail := func(op string, err error) error {
		unix.Close(fd)
		return &os.PathError{Op: op, Path: spare, Err: err}
	}
	// Whatever happens from here on, d/name is untouched until the
	// exchange: the spare is not read by anything.
	if err := writeAll(fd, data); err != nil {
		return fail("write", err)
	}
	if err := unix.Ftruncate(fd, int64(len(data))); err != nil {
		return fail("truncate", err)
	}
	if err := fdatasync(fd); err != nil {
		return fail("fdatasync", err)
	}
	if err := unix.Close(fd); err != nil {
		return &os.PathError{Op: "close", Path: spare, Err: err}
	}
	reached("spare-written")
	err = s.exchange(d.fd, spareName, name)
	switch {
	case err == unix.ENOENT:
		// No d/name yet (a job's first _latest): the spare becomes it.
		err = unix.Renameat(d.fd, spareName, d.fd, name)
	case err != nil && exchangeUnsupported(err):
		s.noExchange.Store(true)
		err = unix.Renameat(d.fd, spareName, d.fd, name)
	}
	if err != nil {
		return &os.LinkError{Op: "exchange", Old: spare, New: d.show(name), Err: err}
	}
	reached("exchanged")
	if err := fsyncDir(d); err != nil {
		// Whether the exchange is durable is unknown, so the inode now
		// named spare may still be d/name's after a power cut: never
		// write into it.
		unix.Unlinkat(d.fd, spareName, 0)
		return err
	}
	return nil
}

// writeSynced is writeFile with sync, then an fsync of d.
func writeSynced(d dirh, name string, data []byte) error {
	if err := writeFile(d, name, data, true); err != nil {
		return err
	}
	return fsyncDir(d)
}

// readSmall reads the small regular file name in d without following a
// symlink and without blocking on a FIFO. A missing file is
// os.ErrNotExist.
func readSmall(d dirh, name string, limit int) ([]byte, error) {
	b, _, err := readSmallIno(d, name, limit)
	return b, err
}

// readSmallIno is readSmall that also returns the inode it read.
func readSmallIno(d dirh, name string, limit int) ([]byte, uint64, error) {
	path := d.show(name)
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ELOOP {
			return nil, 0, fmt.Errorf("%w: %s is a symbolic link", ErrCorrupt, path)
		}
		return nil, 0, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	if readHook != nil {
		readHook(name)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, 0, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, 0, fmt.Errorf("%w: %s is not a regular file", ErrCorrupt, path)
	}
	if err := checkOwned(path, &st); err != nil {
		return nil, 0, err
	}
	if st.Size > int64(limit) {
		return nil, 0, fmt.Errorf("%w: %s is larger than %d bytes", ErrCorrupt, path, limit)
	}
	buf := make([]byte, st.Size+1)
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, 0, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if m == 0 {
			break
		}
		n += m
	}
	return buf[:n], uint64(st.Ino), nil
}

// Gone reports whether the store's directory, or its lock file, was
// removed since Open (a store made at its path since is another store: this
// one never resolves its path again).
func (s *Store) Gone() bool {
	var st unix.Stat_t
	if err := unix.Fstat(s.root.fd, &st); err == nil && st.Nlink == 0 {
		return true
	}
	return unix.Fstatat(s.root.fd, lockName, &st, unix.AT_SYMLINK_NOFOLLOW) == unix.ENOENT
}
