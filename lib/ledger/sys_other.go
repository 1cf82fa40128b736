//go:build !linux

package ledger

import (
	"crypto/rand"

	"golang.org/x/sys/unix"
)

// renameExchange is unsupported off Linux: records are then replaced by a
// temporary file and rename (see replaceFile).
func renameExchange(dirfd int, a, b string) error { return unix.ENOSYS }

// syncData is fsync(2) where fdatasync(2) is not offered.
func syncData(fd int) error { return unix.Fsync(fd) }

// randomBytes fills b from crypto/rand.
func randomBytes(b []byte) bool {
	_, err := rand.Read(b)
	return err == nil
}

// oPath opens a folder on the way to the store only to walk through it.
const oPath = unix.O_RDONLY

// lockHolder is unknown where /proc/locks is not offered.
func lockHolder(fd int) string { return "" }
