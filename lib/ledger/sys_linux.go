package ledger

import "golang.org/x/sys/unix"

// renameExchange atomically swaps the names a and b (renameat2
// RENAME_EXCHANGE).
func renameExchange(a, b string) error {
	return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
}

// syncData is fdatasync(2): the data and what is needed to read it back.
func syncData(fd int) error { return unix.Fdatasync(fd) }

// randomBytes fills b from getrandom(2), reporting false if it could not
// (kernels older than 3.17). getrandom directly: crypto/rand's FIPS
// machinery costs a noticeable share of a short-lived process's start-up.
func randomBytes(b []byte) bool {
	n, err := unix.Getrandom(b, 0)
	return err == nil && n == len(b)
}
