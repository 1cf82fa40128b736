package ledger

import "time"

// Keep says how a runner keeps its lease (Ledger.KeepLease).
type Keep struct {
	// Since is when the lease was last set: a moment just before the
	// statement that set it was sent, so that the store's lease end (a
	// database's now() + lease, on its clock) is never earlier than Since
	// + lease. Zero: when KeepLease is called.
	Since time.Time
	// Stop is what stopping the payload may take at most (StopBudget):
	// Lost is called that long before the lease runs out.
	Stop time.Duration
	// Lost, if not nil, is called once when the lease can no longer be
	// renewed in time.
	Lost func()
	// Warn, if not nil, hears of failed renewals and of the loss.
	Warn func(format string, args ...any)
}

// FenceMargin is what a runner allows, beyond the grace, for its payload
// to die of KILL and be reaped: the stop that fences a runner without a
// lease starts grace + FenceMargin before the lease runs out.
const FenceMargin = 500 * time.Millisecond

// StopBudget is how long before its lease runs out a runner whose payload
// is stopped with grace (TERM, grace, KILL) starts stopping it: Keep.Stop.
func StopBudget(grace time.Duration) time.Duration { return grace + FenceMargin }

// Lease math, as the manual states it (pgstore's Store.KeepLease, the one
// store that keeps a lease, computes it): a runner renews every
// (lease - StopBudget(grace)) / 3, each try bounded by that much too (one
// that must connect first, by when the lease is given up) and made on a
// fresh connection after a failure; when the lease was last renewed at t
// (the moment its statement was sent), the runner stops its payload at
// t + lease - StopBudget(grace) at the latest. location.CheckLease asks
// that this leave at least half the lease for renewing, so that a lease
// has two tries or more before it is given up.
