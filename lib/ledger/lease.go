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
	// Replaced, if not nil, is called once instead of Lost when a
	// renewal finds the execution ended by someone else (recovered once
	// its lease ran out, while the runner could not renew: paused,
	// partitioned): the runner no longer holds it, and stops its payload
	// at once.
	Replaced func()
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

// LeaseDrift is the margin a runner allows for its clock running slower
// than the database's, which counts the lease: 1% of the lease.
func LeaseDrift(lease time.Duration) time.Duration { return lease / 100 }

// FenceWindow is how long after the moment the last successful renewal
// was sent a runner keeps its payload: lease - LeaseDrift(lease) - stop,
// stop being StopBudget(grace). The fence is then at
// sent + FenceWindow on BootClock, which counts through a suspend.
func FenceWindow(lease, stop time.Duration) time.Duration {
	return lease - LeaseDrift(lease) - stop
}

// Lease math, as the manual states it (pgstore's Store.KeepLease, the one
// store that keeps a lease, computes it): a runner renews every
// (lease - StopBudget(grace)) / 3, each try bounded by that much too (one
// that must connect first, by when the lease is given up) and made on a
// fresh connection after a failure; when the last successful renewal's
// statement was sent at t (on BootClock), the runner stops its payload at
// t + FenceWindow(lease, StopBudget(grace)) at the latest. A runner that
// finds itself past that moment without having tried to renew in the
// last interval (it was paused: SIGSTOP, a frozen VM, a suspend) tries
// once more at once, bounded by the interval or a second, whichever is
// shorter, before it gives up: a lease the database has not seen run out,
// or one that ran out with no other host acting on it, is renewed, and
// the payload runs on. location.CheckLease asks for lease ≥ 2 ×
// StopBudget(grace), which leaves about half the lease for renewing, so
// that a lease has two tries or more before it is given up.
