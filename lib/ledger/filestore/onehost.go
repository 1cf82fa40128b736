package filestore

import (
	"context"

	"github.com/tether-sh/tether/lib/ledger"
)

// The operations of the seam (ledger.Ledger) that only a store hosts share has
// work for. The file store is one host's: it judges its owners by PID,
// so it keeps no leases (and no result is refused for a lease that ran
// out); its records have no late result; its folder is reached without a
// network, so a finish has nothing to wait through.

// FinishRetrying is Finish: the file store is never out of reach for a
// moment, so there is nothing to try again.
func (s *Store) FinishRetrying(id string, status ledger.Status, exitCode *int, errMsg string) (ledger.Record, error) {
	return s.Finish(id, status, exitCode, errMsg)
}

// RecordLate keeps nothing (the file store's records have no late
// result) and reports so: false, nil.
func (s *Store) RecordLate(id string, status ledger.Status, exitCode *int, errMsg string) (bool, error) {
	return false, nil
}

// RecoverHost is ledger.ErrOneHost: the file store holds only this host's
// executions, which Recover judges by their processes.
func (s *Store) RecoverHost(host string) ([]ledger.Record, error) {
	return nil, ledger.ErrOneHost
}

// KeepLease returns at once: the file store keeps no lease (its owners
// are judged by PID), so there is nothing to renew and nothing to lose.
func (s *Store) KeepLease(ctx context.Context, id string, k ledger.Keep) {}
