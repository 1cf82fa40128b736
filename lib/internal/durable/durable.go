package durable

import (
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// TempPrefix starts the name of every temporary file staged in a Dir,
// the spare included, so that a directory's owner can tell them from its
// real entries (and remove them after a crash).
const TempPrefix = ".tmp."

// SpareName is the spare file of a directory written through a Replacer:
// the next version of any of its files is written into it in place and
// exchanged with the file's name.
const SpareName = TempPrefix + "spare"

// Dir is an open directory (FD, opened O_DIRECTORY, or O_PATH where only
// walked) and the path it is shown by in messages: nothing is resolved
// through Path.
type Dir struct {
	FD   int
	Path string
}

// Show returns the path name in d is shown by.
func (d Dir) Show(name string) string { return d.Path + "/" + name }

// Sync makes the entries of d durable (fsync of the directory).
func (d Dir) Sync() error {
	for {
		err := unix.Fsync(d.FD)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "fsync", Path: d.Path, Err: err}
		}
		return nil
	}
}

// SyncAt fsyncs the directory open as fd (possibly O_PATH) at path.
func SyncAt(fd int, path string) error {
	dfd, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(dfd)
	return Dir{FD: dfd, Path: path}.Sync()
}

// Fdatasync flushes the data of fd and what is needed to read it back
// (fsync where fdatasync is not offered), retrying on EINTR.
func Fdatasync(fd int) error {
	for {
		err := syncData(fd)
		if err != unix.EINTR {
			return err
		}
	}
}

// WriteAll writes data at offset 0 of fd.
func WriteAll(fd int, data []byte) error {
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

// FileMode is the mode of a new file in d: 0600, and 0640 where d lets its
// group read and search it (a store its owner opened to a group with chmod
// -R g+rX, or a setgid folder), so that what the owner writes later stays
// readable to that group. Never anything for others.
func FileMode(d Dir) uint32 {
	if _, ok := groupReads(d); ok {
		return 0o640
	}
	return 0o600
}

// DirMode is the mode of a new folder in d: 0700, and 0750 where d lets its
// group read and search it (see FileMode).
func DirMode(d Dir) uint32 {
	if _, ok := groupReads(d); ok {
		return 0o750
	}
	return 0o700
}

// Inherit gives fd, a file or folder just created in d, d's group and
// its group's read (and for a folder search) bit, where d lets its group
// read and search it; elsewhere it does nothing. The group is set as a
// setgid folder would (a user may give a file only a group it is in; where
// it cannot, the file keeps its group), the bits whatever the umask: a
// cron job's umask 077 would otherwise lock the group out of what it
// writes next.
func Inherit(d Dir, fd int, folder bool) {
	gid, ok := groupReads(d)
	if !ok {
		return
	}
	unix.Fchown(fd, -1, int(gid))
	mode := uint32(0o640)
	if folder {
		mode = 0o750
	}
	unix.Fchmod(fd, mode)
}

// groupReads returns d's group where d grants it read and search.
func groupReads(d Dir) (uint32, bool) {
	var st unix.Stat_t
	if unix.Fstat(d.FD, &st) != nil || st.Mode&0o050 != 0o050 {
		return 0, false
	}
	return st.Gid, true
}

// CreateExcl creates name in d (FileMode) with O_EXCL, removing whatever
// held the name before: a stale file may have other links, so it is never
// written into. The umask applies to 0600 only: bits FileMode gives the
// group are set whatever the umask (a cron job's umask 077 would
// otherwise lock its group out of what it writes next).
func CreateExcl(d Dir, name string) (int, error) {
	const flags = unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Openat(d.FD, name, flags, 0o600)
	if err == unix.EEXIST {
		if err := unix.Unlinkat(d.FD, name, 0); err != nil && err != unix.ENOENT {
			return -1, err
		}
		fd, err = unix.Openat(d.FD, name, flags, 0o600)
	}
	if err != nil {
		return -1, err
	}
	Inherit(d, fd, false)
	return fd, nil
}

// Pending is a temporary file d/.tmp.NAME written next to its
// destination d/NAME, not yet renamed over it.
type Pending struct {
	Dir  Dir
	Temp string // the temporary name in Dir
	Name string // the destination name in Dir
}

// create creates d/.tmp.name afresh (CreateExcl).
func create(d Dir, name string) (Pending, int, error) {
	p := Pending{Dir: d, Temp: TempPrefix + name, Name: name}
	fd, err := CreateExcl(d, p.Temp)
	if err != nil {
		return p, -1, &os.PathError{Op: "create", Path: d.Show(p.Temp), Err: err}
	}
	return p, fd, nil
}

// Stage writes data to d/.tmp.name (0600), fdatasync'ed if sync.
func Stage(d Dir, name string, data []byte, sync bool) (Pending, error) {
	p, fd, err := create(d, name)
	if err != nil {
		return p, err
	}
	path := d.Show(p.Temp)
	fail := func(op string, err error) (Pending, error) {
		unix.Close(fd)
		p.Abort()
		return p, &os.PathError{Op: op, Path: path, Err: err}
	}
	if err := WriteAll(fd, data); err != nil {
		return fail("write", err)
	}
	if sync {
		if err := Fdatasync(fd); err != nil {
			return fail("fdatasync", err)
		}
	}
	if err := unix.Close(fd); err != nil {
		p.Abort()
		return p, &os.PathError{Op: "close", Path: path, Err: err}
	}
	return p, nil
}

// StageOpen writes data to d/.tmp.name (0600) like Stage without sync,
// and returns the file still open, so that the caller can flush it
// (Fdatasync) alongside other work; the caller closes it.
func StageOpen(d Dir, name string, data []byte) (Pending, int, error) {
	p, fd, err := create(d, name)
	if err != nil {
		return p, -1, err
	}
	if err := WriteAll(fd, data); err != nil {
		unix.Close(fd)
		p.Abort()
		return p, -1, &os.PathError{Op: "write", Path: d.Show(p.Temp), Err: err}
	}
	return p, fd, nil
}

// Commit renames the staged file over its destination (atomically); the
// caller fsyncs the directory (Dir.Sync) to make the rename durable. On
// error the staged file is removed.
func (p Pending) Commit() error {
	if err := unix.Renameat(p.Dir.FD, p.Temp, p.Dir.FD, p.Name); err != nil {
		p.Abort()
		return &os.PathError{Op: "rename", Path: p.Dir.Show(p.Temp), Err: err}
	}
	return nil
}

// ErrExists is CommitNew's error when the destination exists already.
var ErrExists = errors.New("exists already")

// CommitNew is Commit for a destination that must not exist yet: one that
// does is left alone and ErrExists is returned (the staged file removed).
// Where the file system cannot rename without replacing (renameat2
// RENAME_NOREPLACE: EINVAL, ENOSYS), it renames as Commit does, and the
// caller's own check that the destination does not exist stands.
func (p Pending) CommitNew() error {
	err := renameNoReplace(p.Dir.FD, p.Temp, p.Name)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EEXIST):
		p.Abort()
		return &os.PathError{Op: "rename", Path: p.Dir.Show(p.Name), Err: ErrExists}
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS):
		return p.Commit()
	}
	p.Abort()
	return &os.PathError{Op: "rename", Path: p.Dir.Show(p.Temp), Err: err}
}

// Abort removes the staged file.
func (p Pending) Abort() { unix.Unlinkat(p.Dir.FD, p.Temp, 0) }

// Write replaces name in d with data through d/.tmp.name and rename, so a
// reader (or a crash) sees the old or the new content. With sync the data
// is fdatasync'ed before the rename; the caller fsyncs d to make the
// rename itself durable. On error the old file is untouched.
func Write(d Dir, name string, data []byte, sync bool) error {
	p, err := Stage(d, name, data, sync)
	if err != nil {
		return err
	}
	return p.Commit()
}

// WriteSynced is Write with sync, then an fsync of d.
func WriteSynced(d Dir, name string, data []byte) error {
	if err := Write(d, name, data, true); err != nil {
		return err
	}
	return d.Sync()
}

// WriteFile durably replaces the file at path with data (mode perm
// exactly: the umask does not apply), for callers that hold no directory
// open: a temporary file in the same directory, fdatasync, rename, fsync
// of the directory. A reader never sees a partial file.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = Fdatasync(int(f.Fd()))
		if err != nil {
			err = &os.PathError{Op: "fdatasync", Path: tmp, Err: err}
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// ExchangeUnsupported reports whether err from an exchange means the
// kernel or the file system does not offer RENAME_EXCHANGE.
func ExchangeUnsupported(err error) bool {
	return err == unix.EINVAL || err == unix.ENOSYS || err == unix.EOPNOTSUPP
}

// A Replacer replaces files in place through their directory's spare
// (SpareName), allocating no inode per write. Its zero value is ready;
// one Replacer serves any number of directories. Writes through it to one
// directory must be serialised by the caller (the spare is shared).
type Replacer struct {
	// Exchange swaps the names a and b in dirfd; nil means
	// renameat2(RENAME_EXCHANGE). Tests replace it to exercise the
	// fallback.
	Exchange func(dirfd int, a, b string) error
	// Reached, if set, is called between durable steps ("spare-written",
	// "exchanged"), so that crash tests can stop a writer there.
	Reached func(point string)

	// noExchange is set once RENAME_EXCHANGE turned out to be
	// unsupported; files are then replaced by temporary file and rename.
	noExchange atomic.Bool
}

func (r *Replacer) reached(point string) {
	if r.Reached != nil {
		r.Reached(point)
	}
}

// NoExchange reports whether the Replacer fell back to rename.
func (r *Replacer) NoExchange() bool { return r.noExchange.Load() }

// openSpare opens d/.tmp.spare for writing in place, or creates it. The
// spare is written into only while it is a regular file of ours with no
// other link (a file still linked elsewhere, or a hard link planted there
// or made by a `cp -al` snapshot, is never written through): otherwise
// its name is removed and a fresh file created. ok is false if the name
// holds something that is not a file; the caller then uses a temporary
// file.
func openSpare(d Dir) (fd int, ok bool, err error) {
	fd, err = unix.Openat(d.FD, SpareName, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err == nil {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			unix.Close(fd)
			return -1, false, nil
		}
		if st.Nlink == 1 && st.Uid == uint32(os.Geteuid()) {
			gid, group := groupReads(d)
			switch {
			case group && (st.Mode&0o7777 != 0o640 || st.Gid != gid):
				Inherit(d, fd, false)
			case !group && st.Mode&0o7777 != 0o600:
				unix.Fchmod(fd, 0o600)
			}
			return fd, true, nil
		}
		unix.Close(fd)
		err = unix.EEXIST
	}
	switch err {
	case unix.ENOENT, unix.EEXIST:
		fd, err = CreateExcl(d, SpareName)
	case unix.ELOOP, unix.ENXIO, unix.EISDIR:
		return -1, false, nil
	}
	if err != nil {
		return -1, false, &os.PathError{Op: "open", Path: d.Show(SpareName), Err: err}
	}
	return fd, true, nil
}

// Replace durably makes data the content of name in d, as atomically as
// WriteSynced but mostly without allocating an inode (unless d/name does
// not exist yet: the spare is then renamed to it): data is written in
// place into d/.tmp.spare (see openSpare), which is truncated to its
// length and fdatasync'ed, then exchanged with d/name by
// renameat2(RENAME_EXCHANGE), and d is fsynced. The previous version's
// inode is left under the spare name for the next replacement: so it is
// written into only after the exchange that made it the spare was made
// durable by that fsync (if the fsync fails the spare is unlinked
// instead), and after a power cut d/name never names an inode that was
// since overwritten. Where RENAME_EXCHANGE is unsupported the spare is
// renamed over d/name instead, and later calls use WriteSynced.
func (r *Replacer) Replace(d Dir, name string, data []byte) error {
	if r.noExchange.Load() {
		return WriteSynced(d, name, data)
	}
	spare := d.Show(SpareName)
	fd, ok, err := openSpare(d)
	if err != nil {
		return err
	}
	if !ok {
		return WriteSynced(d, name, data)
	}
	fail := func(op string, err error) error {
		unix.Close(fd)
		return &os.PathError{Op: op, Path: spare, Err: err}
	}
	// Whatever happens from here on, d/name is untouched until the
	// exchange: the spare is not read by anything.
	if err := WriteAll(fd, data); err != nil {
		return fail("write", err)
	}
	if err := unix.Ftruncate(fd, int64(len(data))); err != nil {
		return fail("truncate", err)
	}
	if err := Fdatasync(fd); err != nil {
		return fail("fdatasync", err)
	}
	if err := unix.Close(fd); err != nil {
		return &os.PathError{Op: "close", Path: spare, Err: err}
	}
	r.reached("spare-written")
	exchange := r.Exchange
	if exchange == nil {
		exchange = renameExchange
	}
	err = exchange(d.FD, SpareName, name)
	switch {
	case err == unix.ENOENT:
		// No d/name yet: the spare becomes it.
		err = unix.Renameat(d.FD, SpareName, d.FD, name)
	case err != nil && ExchangeUnsupported(err):
		r.noExchange.Store(true)
		err = unix.Renameat(d.FD, SpareName, d.FD, name)
	}
	if err != nil {
		return &os.LinkError{Op: "exchange", Old: spare, New: d.Show(name), Err: err}
	}
	r.reached("exchanged")
	if err := d.Sync(); err != nil {
		// Whether the exchange is durable is unknown, so the inode now
		// named spare may still be d/name's after a power cut: never
		// write into it.
		unix.Unlinkat(d.FD, SpareName, 0)
		return err
	}
	return nil
}
