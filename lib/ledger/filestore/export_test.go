package filestore

import (
	"io"
	"strconv"
	"time"

	"github.com/tether-sh/tether/lib/ledger/filestore/wire"
)

// SetClock replaces s's clock, for the conformance suite run from package
// filestore_test.
func SetClock(s *Store, now func() time.Time) { s.now = now }

// RawRecord returns execution id as stored: the offset of its newest
// frame in its job's log and that version, which any write changes.
func RawRecord(s *Store, id string) ([]byte, error) {
	loc, err := s.locate(id, false)
	if err != nil {
		return nil, err
	}
	defer loc.close()
	return append([]byte(strconv.FormatInt(loc.off, 10)+" "), wire.Encode(loc.rec)...), nil
}

// readOutput reads what Output opens whole.
func readOutput(s *Store, id string) ([]byte, error) {
	out, err := s.Output(id)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	return io.ReadAll(out)
}
