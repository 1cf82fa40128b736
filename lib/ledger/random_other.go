//go:build !linux

package ledger

import "crypto/rand"

// randomBytes fills b from crypto/rand.
func randomBytes(b []byte) bool {
	_, err := rand.Read(b)
	return err == nil
}
