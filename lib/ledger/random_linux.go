package ledger

import "golang.org/x/sys/unix"

// randomBytes fills b from getrandom(2), reporting false if it could not
// (kernels older than 3.17). getrandom directly: crypto/rand's FIPS
// machinery costs a noticeable share of a short-lived process's start-up.
func randomBytes(b []byte) bool {
	n, err := unix.Getrandom(b, 0)
	return err == nil && n == len(b)
}
