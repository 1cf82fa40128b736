package filestore

import (
	"time"

	"github.com/tether-sh/tether/lib/ledger"
)

// SetClock replaces s's clock, for the conformance suite run from package
// filestore_test.
func SetClock(s *Store, now func() time.Time) { s.now = now }

// RawRecord returns exec/ID as stored.
func RawRecord(s *Store, id string) ([]byte, error) {
	return readSmall(s.exec, id, ledger.MaxRecordSize)
}
