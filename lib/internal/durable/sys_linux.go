package durable

import "golang.org/x/sys/unix"

// renameExchange atomically swaps the names a and b in the directory dirfd
// (renameat2 RENAME_EXCHANGE).
func renameExchange(dirfd int, a, b string) error {
	return unix.Renameat2(dirfd, a, dirfd, b, unix.RENAME_EXCHANGE)
}

// syncData is fdatasync(2): the data and what is needed to read it back.
func syncData(fd int) error { return unix.Fdatasync(fd) }

// renameNoReplace renames a to b in the directory dirfd unless b exists
// (EEXIST) (renameat2 RENAME_NOREPLACE).
func renameNoReplace(dirfd int, a, b string) error {
	return unix.Renameat2(dirfd, a, dirfd, b, unix.RENAME_NOREPLACE)
}
