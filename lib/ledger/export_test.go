package ledger

import "time"

// SetClock replaces s's clock, for the conformance suite run from package
// ledger_test.
func SetClock(s *Store, now func() time.Time) { s.now = now }

// RawRecord returns exec/ID as stored.
func RawRecord(s *Store, id string) ([]byte, error) { return readSmall(s.exec, id, maxRecordSize) }
