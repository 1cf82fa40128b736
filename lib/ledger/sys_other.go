//go:build !linux

package ledger

import (
	"crypto/rand"

	"golang.org/x/sys/unix"
)

// randomBytes fills b from crypto/rand.
func randomBytes(b []byte) bool {
	_, err := rand.Read(b)
	return err == nil
}

// oPath opens a folder on the way to the store only to walk through it.
const oPath = unix.O_RDONLY

// lockHolder is unknown where /proc/locks is not offered.
func lockHolder(fd int) string { return "" }
