package pgstore

// PENDING: a placeholder so that *Store keeps implementing ledger.Ledger
// after Summaries was added (issue #18/#19); helper "monitor" replaces
// this whole file with the PostgreSQL implementation. Until then
// ledgertest skips its case for this store (PendingStoreAPI).

import (
	"errors"
	"strings"

	"github.com/tether-sh/tether/lib/ledger"
)

var errPending = errors.New("not supported yet by the PostgreSQL store")

// PendingStoreAPI tells ledgertest to skip the cases of the API this file
// stands in for (OpenOutput, Output, Every and PruneOptions.Job are in
// output.go, claim.go and query.go). Delete it with the file.
func (s *Store) PendingStoreAPI(test string) bool { return strings.Contains(test, "Summaries") }

// Summaries is not supported yet.
func (s *Store) Summaries(jobs ...string) ([]ledger.Summary, error) { return nil, errPending }
