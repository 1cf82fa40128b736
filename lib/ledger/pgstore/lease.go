package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tether-sh/tether/lib/ledger"
)

// Renew extends execution id's lease by its length from now, on the
// server's clock, while it is claimed or running. ok is false when there
// is nothing to renew (ended, or never leased).
func (s *Store) Renew(id string) (until time.Time, ok bool, err error) {
	err = s.do(func(ctx context.Context, c *pgx.Conn) error {
		return c.QueryRow(ctx, `UPDATE tether.executions SET lease_until = now() + lease
			WHERE id = $1 AND status IN ('claimed', 'running') AND lease IS NOT NULL
			RETURNING lease_until`, id).Scan(&until)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, false, nil
	}
	return until, err == nil, err
}

// KeepLease renews execution id's lease every third of this handle's
// lease until ctx is done or the execution ended; a renewal that fails
// (the database unreachable) is tried again sooner, and warn (if not nil)
// hears of the first failure of a run of them and of the recovery. The
// payload is never stopped for it: a lease that runs out only lets other
// hosts judge the execution.
func (s *Store) KeepLease(ctx context.Context, id string, warn func(format string, args ...any)) {
	if s.opts.Lease <= 0 {
		return
	}
	every := s.opts.Lease / 3
	failing := false
	for {
		wait := every
		if failing {
			wait = min(every, time.Second)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		_, ok, err := s.Renew(id)
		switch {
		case err != nil:
			if !failing && warn != nil {
				warn("cannot renew the lease of %s: %v", id, err)
			}
			failing = true
		case !ok:
			return
		default:
			if failing && warn != nil {
				warn("renewed the lease of %s again", id)
			}
			failing = false
		}
	}
}

// FinishRetrying is Finish, tried again with backoff while the database
// is unavailable, for at most the lease (DefaultLease without one): after
// that other hosts may judge the execution anyway. A finish whose first
// try reached the server but whose answer was lost is refused on retry
// with the record already holding this result: that is success.
func (s *Store) FinishRetrying(id string, status ledger.Status, exitCode *int, errMsg string) (ledger.Record, error) {
	limit := s.opts.Lease
	if limit <= 0 {
		limit = DefaultLease
	}
	deadline := time.Now().Add(limit)
	backoff := 100 * time.Millisecond
	retried := false
	for {
		r, err := s.Finish(id, status, exitCode, errMsg)
		if err == nil || !errors.Is(err, ErrUnavailable) || time.Now().Add(backoff).After(deadline) {
			if retried && errors.Is(err, ledger.ErrRefused) && r.Status == status && sameCode(r.ExitCode, exitCode) {
				return r, nil
			}
			return r, err
		}
		retried = true
		time.Sleep(backoff)
		backoff = min(2*backoff, 2*time.Second)
	}
}

func sameCode(a, b *int) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}
