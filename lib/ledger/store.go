package ledger

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofrs/flock"
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

// Store is an open ledger directory. It holds no file descriptors between
// operations and is safe for concurrent use by goroutines and processes:
// each write operation takes the store's flock on its own descriptor.
type Store struct {
	dir string
	// now is the clock; tests replace it.
	now func() time.Time

	identOnce sync.Once
	host      string
	bootID    string

	// noExchange is set once renameat2(RENAME_EXCHANGE) turned out to be
	// unsupported here; records are then replaced by temp file and rename.
	noExchange atomic.Bool
	// exchange is renameExchange; tests replace it to exercise the fallback.
	exchange func(a, b string) error
}

// exchangeUnsupported reports whether err from exchange means the kernel or
// the file system does not offer RENAME_EXCHANGE.
func exchangeUnsupported(err error) bool {
	return err == unix.EINVAL || err == unix.ENOSYS || err == unix.EOPNOTSUPP
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
// if it does not exist. It refuses (ErrUnsafeStore) a store that is
// group/other-writable, owned by another user, on a network file system, or
// a non-empty directory that is not a ledger store.
func Open(dir string) (*Store, error) {
	if dir == "" {
		return nil, badInputf("empty store directory")
	}
	s := &Store{dir: filepath.Clean(dir), now: time.Now, exchange: renameExchange}
	var st unix.Stat_t
	err := unix.Stat(s.dir, &st)
	if errors.Is(err, unix.ENOENT) {
		if err := s.create(); err != nil {
			return nil, err
		}
		err = unix.Stat(s.dir, &st)
	}
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", s.dir, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil, fmt.Errorf("%w: store %s is not a directory", ErrUnsafeStore, s.dir)
	}
	if err := checkOwned(s.dir, &st); err != nil {
		return nil, err
	}
	if err := checkFS(s.dir); err != nil {
		return nil, err
	}
	var lst unix.Stat_t
	err = unix.Lstat(s.path(lockName), &lst)
	if errors.Is(err, unix.ENOENT) {
		// An empty directory (made by the user, or a creation cut short) is
		// initialised; anything else is not ours to write into.
		if empty, eerr := dirEmptyOrOurs(s.dir); eerr != nil || !empty {
			if eerr != nil {
				return nil, fmt.Errorf("store %s: %w", s.dir, eerr)
			}
			return nil, fmt.Errorf("%w: %s is not empty and is not a ledger store (it has no lock file)", ErrUnsafeStore, s.dir)
		}
		if err := s.init(); err != nil {
			return nil, err
		}
		err = unix.Lstat(s.path(lockName), &lst)
	}
	if err != nil {
		return nil, fmt.Errorf("store %s: lock file: %w", s.dir, err)
	}
	if lst.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrUnsafeStore, s.path(lockName))
	}
	if err := checkOwned(s.path(lockName), &lst); err != nil {
		return nil, err
	}
	for _, d := range []string{execDir, jobsDir, activeDir} {
		if err := unix.Lstat(s.path(d), &lst); err != nil {
			if errors.Is(err, unix.ENOENT) {
				return nil, &kindError{kind: ErrCorrupt, msg: fmt.Sprintf("store %s is damaged: it has a lock file but no %s/ directory", s.dir, d)}
			}
			return nil, fmt.Errorf("store %s: %w", s.path(d), err)
		}
		if lst.Mode&unix.S_IFMT != unix.S_IFDIR {
			return nil, fmt.Errorf("%w: %s is not a directory", ErrUnsafeStore, s.path(d))
		}
		if err := checkOwned(s.path(d), &lst); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

func (s *Store) path(elem ...string) string {
	return filepath.Join(append([]string{s.dir}, elem...)...)
}

// create makes the store directory and its parents 0700 (the parents are
// state directories such as ~/.local/state/tether), then initialises it.
func (s *Store) create() error {
	parent := filepath.Dir(s.dir)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return fmt.Errorf("creating store %s: %w", s.dir, err)
	}
	if err := os.Mkdir(s.dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("creating store %s: %w", s.dir, err)
	}
	// The umask may have cleared bits we need; it can never have added any.
	if err := os.Chmod(s.dir, 0o700); err != nil {
		return fmt.Errorf("creating store %s: %w", s.dir, err)
	}
	return fsyncDir(parent)
}

// init creates the subdirectories and, last, the lock file, whose presence
// marks a complete store. Concurrent initialisers are harmless: every step
// tolerates "already exists".
func (s *Store) init() error {
	for _, d := range []string{execDir, jobsDir, activeDir} {
		if err := mkdirPrivate(s.path(d)); err != nil {
			return fmt.Errorf("creating store %s: %w", s.dir, err)
		}
	}
	if err := fsyncDir(s.dir); err != nil {
		return fmt.Errorf("creating store %s: %w", s.dir, err)
	}
	fd, err := unix.Open(s.path(lockName), unix.O_CREAT|unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("creating store %s: lock file: %w", s.dir, err)
	}
	unix.Fchmod(fd, 0o600)
	unix.Close(fd)
	if err := fsyncDir(s.dir); err != nil {
		return fmt.Errorf("creating store %s: %w", s.dir, err)
	}
	return nil
}

// dirEmptyOrOurs reports whether dir holds nothing but (some of) the
// store's own entries: a store whose creation was cut short or is under way
// in another process.
func dirEmptyOrOurs(dir string) (bool, error) {
	f, err := os.Open(dir)
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

// mkdirPrivate makes dir 0700, tolerating one that already exists.
func mkdirPrivate(dir string) error {
	err := unix.Mkdir(dir, 0o700)
	if err == nil {
		return unix.Chmod(dir, 0o700)
	}
	if errors.Is(err, unix.EEXIST) {
		return nil
	}
	return &os.PathError{Op: "mkdir", Path: dir, Err: err}
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
func checkFS(dir string) error {
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		return fmt.Errorf("store %s: statfs: %w", dir, err)
	}
	return checkFSType(dir, int64(fs.Type))
}

func checkFSType(dir string, magic int64) error {
	if name, ok := networkFS[magic&0xffffffff]; ok {
		return fmt.Errorf("%w: %s is on %s, where flock is not reliable; put the ledger on a local file system", ErrUnsafeStore, dir, name)
	}
	return nil
}

// lock takes the store's exclusive flock on a fresh descriptor (flock locks
// belong to the open file description, so goroutines of one process exclude
// each other too) and returns the function that releases it.
func (s *Store) lock() (func(), error) {
	l := flock.New(s.path(lockName), flock.SetFlag(os.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC), flock.SetPermissions(0o600))
	if err := l.Lock(); err != nil {
		return nil, fmt.Errorf("locking %s: %w", l.Path(), err)
	}
	return func() { l.Unlock() }, nil
}

// identity returns this host's name and boot id, read once.
func (s *Store) identity() (host, boot string) {
	s.identOnce.Do(func() { s.host, s.bootID = localIdentity() })
	return s.host, s.bootID
}

// fsyncDir makes the entries of dir durable.
func fsyncDir(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	for {
		err = unix.Fsync(fd)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return &os.PathError{Op: "fsync", Path: dir, Err: err}
	}
	return nil
}

// writeFile replaces dir/name with data through dir/.tmp.name and rename, so
// a reader (or a crash) sees the old or the new content. With sync the data
// is fdatasync'ed before the rename; the caller fsyncs dir to make the
// rename itself durable. On error the old file is untouched.
func writeFile(dir, name string, data []byte, sync bool) error {
	tmp, err := stageFile(dir, name, data, sync)
	if err != nil {
		return err
	}
	return tmp.commit()
}

// staged is a temporary file written next to its destination, not yet
// renamed over it.
type staged struct{ tmp, dst string }

// stageFile writes data to dir/.tmp.name (0600), fdatasync'ed if sync.
func stageFile(dir, name string, data []byte, sync bool) (staged, error) {
	st := staged{tmp: filepath.Join(dir, tmpPrefix+name), dst: filepath.Join(dir, name)}
	fd, err := unix.Open(st.tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return st, &os.PathError{Op: "create", Path: st.tmp, Err: err}
	}
	fail := func(op string, err error) (staged, error) {
		unix.Close(fd)
		unix.Unlink(st.tmp)
		return st, &os.PathError{Op: op, Path: st.tmp, Err: err}
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
		unix.Unlink(st.tmp)
		return st, &os.PathError{Op: "close", Path: st.tmp, Err: err}
	}
	return st, nil
}

// stageOpen writes data to dir/.tmp.name (0600) like stageFile without
// sync, and returns the file still open so that the caller can fdatasync
// it (and must close it).
func stageOpen(dir, name string, data []byte) (staged, int, error) {
	st := staged{tmp: filepath.Join(dir, tmpPrefix+name), dst: filepath.Join(dir, name)}
	fd, err := unix.Open(st.tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return st, -1, &os.PathError{Op: "create", Path: st.tmp, Err: err}
	}
	if err := writeAll(fd, data); err != nil {
		unix.Close(fd)
		unix.Unlink(st.tmp)
		return st, -1, &os.PathError{Op: "write", Path: st.tmp, Err: err}
	}
	return st, fd, nil
}

// commit renames the staged file over its destination (atomically).
func (st staged) commit() error {
	if err := unix.Rename(st.tmp, st.dst); err != nil {
		unix.Unlink(st.tmp)
		return &os.PathError{Op: "rename", Path: st.tmp, Err: err}
	}
	return nil
}

// abort removes the staged file.
func (st staged) abort() { unix.Unlink(st.tmp) }

// createEmpty creates the empty marker file path (0600); one that already
// exists is fine.
func createEmpty(path string) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return &os.PathError{Op: "create", Path: path, Err: err}
	}
	return unix.Close(fd)
}

// linkMarker makes the index marker path a hard link to the file src (a
// record's first version, 0600): no inode is allocated. A marker that
// already exists is fine; where src cannot take another link (EMLINK,
// EPERM, EXDEV: some file systems) an empty marker is created instead.
// Nothing ever reads a marker's content.
func linkMarker(src, path string) error {
	err := unix.Link(src, path)
	switch err {
	case nil, unix.EEXIST:
		return nil
	case unix.EMLINK, unix.EPERM, unix.EXDEV, unix.EOPNOTSUPP:
		return createEmpty(path)
	}
	return &os.LinkError{Op: "link", Old: src, New: path, Err: err}
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

// replaceFile durably makes data the content of dir/name (a record, or a
// job's _latest pointer), as atomically as writeFile with sync followed by
// an fsync of dir, but without allocating an inode (unless dir/name does
// not exist yet: the spare is then renamed to it): data is written in place into
// dir/.tmp.spare (created if missing), which is truncated to its length and
// fdatasync'ed, then exchanged with dir/name by renameat2(RENAME_EXCHANGE),
// and dir is fsynced. The previous version's inode is left under the spare
// name for the next replacement. Must be called with the store lock held
// (the spare is shared). Where RENAME_EXCHANGE is unsupported the spare is
// renamed over dir/name instead, and later calls use writeFile.
func (s *Store) replaceFile(dir, name string, data []byte) error {
	if s.noExchange.Load() {
		return writeSynced(dir, name, data)
	}
	spare, dst := filepath.Join(dir, spareName), filepath.Join(dir, name)
	fd, err := unix.Open(spare, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err == unix.ENOENT {
		fd, err = unix.Open(spare, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	}
	if err != nil {
		if err == unix.ELOOP || err == unix.ENXIO || err == unix.EISDIR {
			// Not a file we made (prune removes it): use a temp file.
			return writeSynced(dir, name, data)
		}
		return &os.PathError{Op: "open", Path: spare, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Uid != uint32(os.Geteuid()) {
		unix.Close(fd)
		return writeSynced(dir, name, data)
	}
	if st.Mode&0o7777 != 0o600 {
		unix.Fchmod(fd, 0o600)
	}
	fail := func(op string, err error) error {
		unix.Close(fd)
		return &os.PathError{Op: op, Path: spare, Err: err}
	}
	// Whatever happens from here on, dir/name is untouched until the
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
	err = s.exchange(spare, dst)
	switch {
	case err == unix.ENOENT:
		// No dir/name yet (a job's first _latest): the spare becomes it.
		err = unix.Rename(spare, dst)
	case err != nil && exchangeUnsupported(err):
		s.noExchange.Store(true)
		err = unix.Rename(spare, dst)
	}
	if err != nil {
		return &os.LinkError{Op: "exchange", Old: spare, New: dst, Err: err}
	}
	reached("exchanged")
	if err := fsyncDir(dir); err != nil {
		// Whether the exchange is durable is unknown, so the inode now
		// named spare may still be dir/name's after a power cut: never
		// write into it.
		unix.Unlink(spare)
		return err
	}
	return nil
}

// writeSynced is writeFile with sync, then an fsync of dir.
func writeSynced(dir, name string, data []byte) error {
	if err := writeFile(dir, name, data, true); err != nil {
		return err
	}
	return fsyncDir(dir)
}

// readSmall reads a small regular file without following a symlink and
// without blocking on a FIFO. A missing file is os.ErrNotExist.
func readSmall(path string, limit int) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ELOOP {
			return nil, fmt.Errorf("%w: %s is a symbolic link", ErrCorrupt, path)
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrCorrupt, path)
	}
	if err := checkOwned(path, &st); err != nil {
		return nil, err
	}
	if st.Size > int64(limit) {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrCorrupt, path, limit)
	}
	buf := make([]byte, st.Size+1)
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if m == 0 {
			break
		}
		n += m
	}
	return buf[:n], nil
}
