package filestore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/internal/durable"
	"github.com/tether-sh/tether/lib/ledger"
)

// Names inside the store.
const (
	lockName = "lock"
	// oldExecDir is the empty folder the first format 3 builds made and
	// nothing reads: tolerated where it is, never made.
	oldExecDir = "exec"
	jobsDir    = "jobs"
	activeDir  = "active"
	handoffDir = "handoff"
	tmpPrefix  = durable.TempPrefix
)

// Store is an open ledger directory. It holds the store's directory and
// its two subdirectories open (Close releases them): every file of the
// store is reached relative to those descriptors, never through a path
// again, so a parent folder renamed or a symbolic link swapped in after
// Open cannot redirect it. A Store is safe for concurrent use by
// goroutines and processes: each write operation takes the store's flock
// on its own descriptor.
type Store struct {
	dir string
	// root is the store's directory; jobs and active its
	// subdirectories, opened once by Open.
	root, jobs, active dirh
	// now is the clock; tests replace it.
	now func() time.Time

	// lockWait bounds the wait for the lock (negative: no bound); warn
	// receives the line said after a second of waiting.
	lockWait time.Duration
	warn     func(msg string)

	// readOnly is set by OpenExisting: nothing is created.
	readOnly bool
	// foreign is a store another user owns, opened read-only by a member
	// of a group it lets read it (see checkReader): it is never locked.
	foreign bool
	// owner is the uid that owns the store directory.
	owner uint32
	// linked caches linksWhole's true (see linked.go).
	linked atomic.Bool
}

// dirh is an open directory of the store and the path it is shown by (in
// messages only: nothing is resolved through it).
type dirh = durable.Dir

// An Option changes how Open opens a store.
type Option func(*Store)

// LockTimeout bounds how long a write waits for the store's lock: d > 0
// gives up after d (ledger.ErrLockTimeout), d < 0 waits forever, 0 means
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

// Clock makes now the store's clock (the times it records and judges
// periods by) instead of time.Now: for the scenarios that put a tool at
// a given time (the test binary's clock hook, never a released one's).
func Clock(now func() time.Time) Option {
	return func(s *Store) {
		if now != nil {
			s.now = now
		}
	}
}

// LockWarn makes fn receive, once per operation, a line saying that the
// operation waits for the lock (and who holds it, when known), after a
// second of waiting. Without it nothing is said.
func LockWarn(fn func(msg string)) Option {
	return func(s *Store) { s.warn = fn }
}

// crashPoint, when set (by the crash tests only), is called at the named
// points of the write paths that separate two durable steps.
var crashPoint func(name string)

// readNamesHook, when set (by TestNoScan only), sees every directory the
// store lists, so a test can prove which operations never list the
// directories that grow with the number of executions.
var readNamesHook func(dir string)

func reached(name string) {
	if crashPoint != nil {
		crashPoint(name)
	}
}

// Open opens the store in dir, creating it (0700, with its lock file 0600)
// and its missing parents (0700) if it does not exist. It refuses
// (ledger.ErrUnsafeStore) a store that is group/other-writable, owned by another
// user, on a network file system, a non-empty directory that is not a
// ledger store, or one whose parent chain another user could change (see
// openStoreDir). The store's directory is opened once, here; every later
// operation is relative to it. Close releases it.
func Open(dir string, opts ...Option) (*Store, error) {
	if dir == "" {
		return nil, ledger.BadInputf("empty store directory")
	}
	closed := dirh{FD: -1}
	s := &Store{dir: filepath.Clean(dir), now: time.Now, lockWait: DefaultLockTimeout,
		root: closed, jobs: closed, active: closed}
	for _, o := range opts {
		o(s)
	}
	fd, others, err := openStoreDir(s.dir, s.readOnly)
	if err != nil {
		return nil, err
	}
	s.root = dirh{FD: fd, Path: s.dir}
	// The folders on the way are judged by whose store it is (a reader
	// passes its owner's home): the owner is known before that judgement.
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		s.Close()
		return nil, fmt.Errorf("store %s: %w", s.dir, err)
	}
	s.owner = st.Uid
	if err := s.checkAncestors(others); err != nil {
		s.Close()
		return nil, err
	}
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
	if err := unix.Fstat(s.root.FD, &st); err != nil {
		return fmt.Errorf("store %s: %w", s.dir, err)
	}
	s.owner = st.Uid
	if s.readOnly && st.Uid != uint32(os.Geteuid()) {
		if err := checkReader(s.dir, &st); err != nil {
			return err
		}
		s.foreign = true
	} else if err := checkOwned(s.dir, &st); err != nil {
		return err
	}
	if err := checkFS(s.root); err != nil {
		return err
	}
	var lst unix.Stat_t
	err := unix.Fstatat(s.root.FD, lockName, &lst, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) && s.readOnly {
		return fmt.Errorf("%w at %s: the directory holds no ledger (only commands that write create one)", ledger.ErrNoStore, s.dir)
	}
	if errors.Is(err, unix.ENOENT) {
		reached("no lock")
		// An empty directory (made by the user, or a creation cut short) is
		// initialised; anything else is not ours to write into. The lock is
		// made last, before any store file but init's: a listing that finds
		// more was made after another process finished making the store
		// (the first use by many at once), which the lock, looked at again,
		// then shows.
		empty, eerr := dirEmptyOrOurs(s.root)
		switch {
		case eerr != nil:
			return fmt.Errorf("store %s: %w", s.dir, eerr)
		case empty:
			if err := s.init(); err != nil {
				return err
			}
		}
		err = unix.Fstatat(s.root.FD, lockName, &lst, unix.AT_SYMLINK_NOFOLLOW)
		if errors.Is(err, unix.ENOENT) && !empty {
			return fmt.Errorf("%w: %s is not empty and is not a ledger store (it has no lock file)", ledger.ErrUnsafeStore, s.dir)
		}
	}
	if err != nil {
		return fmt.Errorf("store %s: lock file: %w", s.dir, err)
	}
	if lst.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%w: %s is not a regular file", ledger.ErrUnsafeStore, s.root.Show(lockName))
	}
	if err := checkOwnedIn(s.root, s.root.Show(lockName), &lst); err != nil {
		return err
	}
	for _, sub := range []struct {
		name string
		h    *dirh
	}{{jobsDir, &s.jobs}, {activeDir, &s.active}} {
		h, err := openSubdir(s.root, sub.name)
		if errors.Is(err, os.ErrNotExist) {
			return ledger.Kindf(ledger.ErrCorrupt, "store %s is damaged: it has a lock file but no %s/ directory", s.dir, sub.name)
		}
		if err != nil {
			return err
		}
		*sub.h = h
	}
	return s.checkFormat()
}

// Close releases the store's directory. The Store must not be used after.
func (s *Store) Close() error {
	for _, h := range []*dirh{&s.jobs, &s.active, &s.root} {
		if h.FD >= 0 {
			unix.Close(h.FD)
			h.FD = -1
		}
	}
	return nil
}

// path is the path a file of the store is shown by (in messages and
// tests; the store never resolves it).
func (s *Store) path(elem ...string) string {
	return filepath.Join(append([]string{s.dir}, elem...)...)
}

// openSubdir opens the directory name in d (not following a symbolic
// link) and checks it is a private directory of ours. One that does not
// exist is os.ErrNotExist.
func openSubdir(d dirh, name string) (dirh, error) {
	p := d.Show(name)
	fd, err := unix.Openat(d.FD, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == unix.ELOOP || err == unix.ENOTDIR {
		return dirh{FD: -1}, fmt.Errorf("%w: %s is not a directory", ledger.ErrUnsafeStore, p)
	}
	if err != nil {
		return dirh{FD: -1}, &os.PathError{Op: "open", Path: p, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return dirh{FD: -1}, &os.PathError{Op: "stat", Path: p, Err: err}
	}
	if err := checkOwnedIn(d, p, &st); err != nil {
		unix.Close(fd)
		return dirh{FD: -1}, err
	}
	return dirh{FD: fd, Path: p}, nil
}

// init creates the subdirectories and, last, the lock file, whose presence
// marks a complete store. Concurrent initialisers are harmless: every step
// tolerates "already exists".
func (s *Store) init() error {
	for _, d := range []string{jobsDir, activeDir} {
		if err := mkdirPrivate(s.root, d); err != nil {
			return fmt.Errorf("creating store %s: %w", s.dir, err)
		}
	}
	// A new store is of this version's format (format.go).
	if err := createMark(s.root, logsMark, markContent); err != nil {
		return fmt.Errorf("creating store %s: %w", s.dir, err)
	}
	if err := s.root.Sync(); err != nil {
		return fmt.Errorf("creating store %s: %w", s.dir, err)
	}
	fd, err := unix.Openat(s.root.FD, lockName, unix.O_CREAT|unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("creating store %s: lock file: %w", s.dir, err)
	}
	unix.Fchmod(fd, 0o600)
	unix.Close(fd)
	if err := s.root.Sync(); err != nil {
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
		if n != oldExecDir && n != jobsDir && n != activeDir && n != lockName && n != logsMark {
			return false, nil
		}
	}
	return true, nil
}

// openListing opens d afresh for reading its entries (a descriptor of its
// own: the offset of d's is shared by every reader).
func openListing(d dirh) (*os.File, error) {
	fd, err := unix.Openat(d.FD, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: d.Path, Err: err}
	}
	return os.NewFile(uintptr(fd), d.Path), nil
}

// readJobNames returns the names of the job directories in d (jobs/),
// sorted. Anything else there (a README, a .DS_Store, a planted link) is
// not a job and is passed over: one stray file must not make every
// reader of the store refuse it. A job named on purpose is still opened
// by openSubdir, which refuses one that is not a directory.
func readJobNames(d dirh) ([]string, error) {
	f, err := openListing(d)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", d.Path, err)
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		if e.IsDir() && ledger.ValidJob(e.Name()) == nil {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// mkdirPrivate makes the directory name in d 0700 (0750 where d lets its
// group read it: durable.DirMode), tolerating one that already exists.
func mkdirPrivate(d dirh, name string) error {
	mode := durable.DirMode(d)
	err := unix.Mkdirat(d.FD, name, mode)
	if errors.Is(err, unix.EEXIST) {
		return nil
	}
	if err != nil {
		return &os.PathError{Op: "mkdir", Path: d.Show(name), Err: err}
	}
	fd, err := unix.Openat(d.FD, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: d.Show(name), Err: err}
	}
	defer unix.Close(fd)
	if err := unix.Fchmod(fd, mode); err != nil {
		return err
	}
	durable.Inherit(d, fd, true)
	return nil
}

// checkOwned refuses a file or directory not owned by the effective uid, or
// writable by group or others.
func checkOwned(path string, st *unix.Stat_t) error {
	if uid := uint32(os.Geteuid()); st.Uid != uid {
		return fmt.Errorf("%w: %s is owned by uid %d, not by you (uid %d)", ledger.ErrUnsafeStore, path, st.Uid, uid)
	}
	if st.Mode&0o022 != 0 {
		return fmt.Errorf("%w: %s is writable by group or others (mode %04o); chmod go-w it", ledger.ErrUnsafeStore, path, st.Mode&0o7777)
	}
	return nil
}

// networkFS names the file system of statfs f_type magic if it is one
// where flock is emulated, advisory per client or not coherent across
// hosts, else "". A switch, not a map: a map literal is built by code at
// every start-up, before any verb runs.
func networkFS(magic int64) string {
	switch magic {
	case 0x6969:
		return "NFS"
	case 0x517b:
		return "SMB"
	case 0xff534d42:
		return "CIFS"
	case 0xfe534d42:
		return "SMB2"
	case 0x5346414f:
		return "AFS"
	case 0x01021997:
		return "9P"
	}
	return ""
}

// checkFS refuses a store on a network file system.
func checkFS(d dirh) error {
	var fs unix.Statfs_t
	if err := unix.Fstatfs(d.FD, &fs); err != nil {
		return fmt.Errorf("store %s: statfs: %w", d.Path, err)
	}
	return checkFSType(d.Path, int64(fs.Type))
}

func checkFSType(dir string, magic int64) error {
	if name := networkFS(magic & 0xffffffff); name != "" {
		return fmt.Errorf("%w: %s is on %s, where flock is not reliable; put the ledger on a local file system", ledger.ErrUnsafeStore, dir, name)
	}
	return nil
}

// createMark creates name in d holding content, or writes the same content
// again where a concurrent initialiser did (every writer writes the same
// bytes at the same place).
func createMark(d dirh, name, content string) error {
	mode := durable.FileMode(d)
	fd, err := unix.Openat(d.FD, name, unix.O_WRONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	if err != nil {
		return &os.PathError{Op: "create", Path: d.Show(name), Err: err}
	}
	durable.Inherit(d, fd, false)
	err = durable.PwriteAll(fd, []byte(content), 0)
	unix.Close(fd)
	if err != nil {
		return &os.PathError{Op: "write", Path: d.Show(name), Err: err}
	}
	return nil
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
	fd, st, err := openRegular(d, name)
	if err != nil {
		return nil, 0, err
	}
	defer unix.Close(fd)
	path := d.Show(name)
	if st.Size > int64(limit) {
		return nil, 0, fmt.Errorf("%w: %s is larger than %d bytes", ledger.ErrCorrupt, path, limit)
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

// openRegular opens the regular file name in d for reading, without
// following a symlink and without blocking on a FIFO, and checks that it
// is owned as its folder says (checkOwnedIn). A missing file is
// os.ErrNotExist. The caller closes the descriptor.
func openRegular(d dirh, name string) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	path := d.Show(name)
	fd, err := unix.Openat(d.FD, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ELOOP {
			return -1, st, fmt.Errorf("%w: %s is a symbolic link", ledger.ErrCorrupt, path)
		}
		return -1, st, &os.PathError{Op: "open", Path: path, Err: err}
	}
	fail := func(err error) (int, unix.Stat_t, error) {
		unix.Close(fd)
		return -1, st, err
	}
	if err := unix.Fstat(fd, &st); err != nil {
		return fail(&os.PathError{Op: "stat", Path: path, Err: err})
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fail(fmt.Errorf("%w: %s is not a regular file", ledger.ErrCorrupt, path))
	}
	if err := checkOwnedIn(d, path, &st); err != nil {
		return fail(err)
	}
	return fd, st, nil
}

// Gone reports whether the store's directory, or its lock file, was
// removed since Open (a store made at its path since is another store: this
// one never resolves its path again).
func (s *Store) Gone() bool {
	var st unix.Stat_t
	if err := unix.Fstat(s.root.FD, &st); err == nil && st.Nlink == 0 {
		return true
	}
	return unix.Fstatat(s.root.FD, lockName, &st, unix.AT_SYMLINK_NOFOLLOW) == unix.ENOENT
}

// Location returns the store's directory: where it is, for messages.
func (s *Store) Location() string { return s.dir }
