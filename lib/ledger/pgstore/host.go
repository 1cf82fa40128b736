package pgstore

import "github.com/tether-sh/tether/lib/ledger"

// The operations of the seam (ledger.Ledger) that need a folder on this
// host. A database is shared by hosts and has none: a handoff goes
// through a temporary folder of the dispatcher's, and a fact about one
// host's boot is no fact for the others, so none is noted.

// HandoffDir is "" and nil: the store has no folder on this host, so the
// dispatcher makes a private temporary one for its handoff.
func (s *Store) HandoffDir() (string, error) { return "", nil }

// BootNote finds no note: the store keeps none. A malformed name is
// ErrBadInput, as in the file store.
func (s *Store) BootNote(name string) (value string, ok bool, err error) {
	return "", false, ledger.ValidNoteName(name)
}

// SetBootNote does nothing: the store keeps no boot notes. A malformed
// name is ErrBadInput, as in the file store.
func (s *Store) SetBootNote(name, value string) error { return ledger.ValidNoteName(name) }
