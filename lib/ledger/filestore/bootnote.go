package filestore

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/tether-sh/tether/lib/internal/durable"
	"github.com/tether-sh/tether/lib/ledger"
)

// A boot note is a fact about this machine that holds until it reboots —
// whether systemd-run --user --scope works here is one — remembered in the
// store so that the first call of a boot finds it out, at a cost, and later
// calls read it:
//
//	DIR/boot.NAME              "BOOT_ID\nVALUE": VALUE, as found during boot BOOT_ID
//
// A note of another boot (or one written where the boot id is unknown) is
// no note. Notes are hints that a caller can always find out again, so a
// damaged one is simply absent; they are written like a record (temporary
// file, fdatasync, rename, fsync of DIR) under the store's lock, so that a
// crash leaves the old note or the new one, and prune leaves them alone.

const (
	bootNotePrefix = "boot."
	maxBootNote    = 4096
)

// BootNote returns the value noted under name during the current boot;
// ok is false when there is none, or only one of another boot.
func (s *Store) BootNote(name string) (value string, ok bool, err error) {
	if err := ledger.ValidNoteName(name); err != nil {
		return "", false, err
	}
	boot := ledger.BootID()
	if boot == "" {
		return "", false, nil
	}
	b, err := readSmall(s.root, bootNotePrefix+name, maxBootNote)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, ledger.ErrCorrupt) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	noted, value, found := strings.Cut(string(b), "\n")
	if !found || noted != boot {
		return "", false, nil
	}
	return value, true, nil
}

// SetBootNote notes value under name for the current boot, durably.
func (s *Store) SetBootNote(name, value string) error {
	if err := ledger.ValidNoteName(name); err != nil {
		return err
	}
	boot := ledger.BootID()
	if boot == "" {
		return ledger.ErrNoBootID
	}
	data := boot + "\n" + value
	if len(data) > maxBootNote {
		return ledger.BadInputf("boot note %s is longer than %d bytes", name, maxBootNote)
	}
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	if err := durable.WriteSynced(s.root, bootNotePrefix+name, []byte(data)); err != nil {
		return fmt.Errorf("writing boot note %s: %w", name, err)
	}
	return nil
}
