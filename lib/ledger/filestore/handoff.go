package filestore

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// HandoffDir returns the store's handoff directory, DIR/handoff, where a
// dispatcher (ledger spawn) and the worker it launched exchange the
// worker's acknowledgement file. It is created 0700 if missing, and
// refused (ledger.ErrUnsafeStore) unless it is a private directory of the
// caller's: another user who could write into it could plant an
// acknowledgement.
func (s *Store) HandoffDir() (string, error) {
	if err := mkdirPrivate(s.root, handoffDir); err != nil {
		return "", fmt.Errorf("cannot create handoff directory: %w", err)
	}
	h, err := openSubdir(s.root, handoffDir)
	if err != nil {
		return "", err
	}
	unix.Close(h.FD)
	return h.Path, nil
}
