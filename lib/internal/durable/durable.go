package durable

import (
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// TempPrefix starts the name of every temporary file staged in a Dir,
// so that a directory's owner can tell them from its real entries (and
// remove them after a crash).
const TempPrefix = ".tmp."

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

// PreadAt fills b from offset off of fd, as far as the file goes: n is
// short of len(b) only at its end (or with err).
func PreadAt(fd int, b []byte, off int64) (n int, err error) {
	for n < len(b) {
		m, err := unix.Pread(fd, b[n:], off+int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	return n, nil
}

// PreadFull is PreadAt where a file that ends before b is filled is
// io.ErrUnexpectedEOF.
func PreadFull(fd int, b []byte, off int64) error {
	n, err := PreadAt(fd, b, off)
	if err == nil && n < len(b) {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// PwriteAll writes all of b at offset off of fd.
func PwriteAll(fd int, b []byte, off int64) error {
	for n := 0; n < len(b); {
		m, err := unix.Pwrite(fd, b[n:], off+int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		n += m
	}
	return nil
}
