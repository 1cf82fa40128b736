//go:build !linux

package durable

import "golang.org/x/sys/unix"

// renameExchange is unsupported off Linux: files are then replaced by a
// temporary file and rename (see Replacer.Replace).
func renameExchange(dirfd int, a, b string) error { return unix.ENOSYS }

// syncData is fsync(2) where fdatasync(2) is not offered.
func syncData(fd int) error { return unix.Fsync(fd) }

// renameNoReplace is unsupported off Linux (ENOSYS): CommitNew then falls
// back to the caller's own check that the destination does not exist.
func renameNoReplace(dirfd int, a, b string) error { return unix.ENOSYS }
