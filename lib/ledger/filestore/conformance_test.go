package filestore_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/filestore"
	"github.com/tether-sh/tether/lib/ledger/ledgertest"
)

// TestConformance holds the file store to the seam's contract.
func TestConformance(t *testing.T) {
	ledgertest.RunConformance(t, ledgertest.Harness{
		Open: func(t *testing.T, now func() time.Time) ledger.Ledger {
			s, err := filestore.Open(filepath.Join(t.TempDir(), "ledger"))
			if err != nil {
				t.Fatalf("Open = %v", err)
			}
			if now != nil {
				filestore.SetClock(s, now)
			}
			return s
		},
		Reopen: func(t *testing.T, st ledger.Ledger) ledger.Ledger {
			s, err := filestore.Open(st.Location())
			if err != nil {
				t.Error(err)
				return nil
			}
			return s
		},
		Raw: func(t *testing.T, st ledger.Ledger, id string) []byte {
			b, err := filestore.RawRecord(st.(*filestore.Store), id)
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
	})
}
