package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tether-sh/tether/lib/ledger"
)

// renewLease extends $1's lease by its length from now (server's clock).
var renewLease = `UPDATE tether.executions SET lease_until = now() + lease
	WHERE id = $1 AND status IN ` + openStatuses + ` AND lease IS NOT NULL
	RETURNING lease_until`

// Renew extends execution id's lease by its length from now, on the
// server's clock, while it is claimed or running. ok is false when there
// is nothing to renew (ended, or never leased).
func (s *Store) Renew(id string) (until time.Time, ok bool, err error) {
	err = s.do(func(ctx context.Context, c *pgx.Conn) error {
		return c.QueryRow(ctx, renewLease, id).Scan(&until)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, false, nil
	}
	return until, err == nil, err
}

// KeepLease renews execution id's lease until ctx is done or the
// execution ended, every (lease - k.Stop) / 3 after the last renewal
// (the lease math of lib/ledger's lease.go). Each try is bounded by that interval too (the statement: the
// client's deadline and the server's statement_timeout; a try that must
// connect first may take until the lease is given up, below), and is
// made on a connection of its own, opened afresh after any failure: never
// behind the store's connection, which a half-open socket can hold for
// its whole statement timeout. A lease last renewed by a
// statement sent at t runs on the server until t + lease at the earliest;
// when no renewal has succeeded by t + lease - k.Stop, KeepLease calls
// k.Lost (the runner then stops its payload, which is gone before the
// lease runs out) and returns. k.Warn hears of the first failure of a run
// of them, of the recovery, and of the loss. A handle opened without a
// lease keeps none: it returns at once.
func (s *Store) KeepLease(ctx context.Context, id string, k ledger.Keep) {
	lease := s.opts.Lease
	if lease <= 0 {
		return
	}
	warn := k.Warn
	if warn == nil {
		warn = func(string, ...any) {}
	}
	every := max((lease-k.Stop)/3, 10*time.Millisecond)
	renewed := k.Since
	if renewed.IsZero() {
		renewed = time.Now()
	}
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			closeNow(conn)
		}
	}()
	failing := false
	for {
		fenceAt := renewed.Add(lease - k.Stop)
		next := renewed.Add(every)
		if failing {
			next = time.Now().Add(min(every/4, time.Second))
		}
		next = minTime(next, fenceAt)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(next)):
		}
		if !time.Now().Before(fenceAt) {
			warn("cannot renew the lease of %s (last renewed %v ago, lease %v): stopping its command before the lease runs out", id, time.Since(renewed).Round(time.Millisecond), lease)
			if k.Lost != nil {
				k.Lost()
			}
			return
		}
		sent := time.Now()
		end := minTime(sent.Add(every), fenceAt)
		if conn == nil {
			// Connecting may take until the lease is given up: a cold
			// connection (a server process started, authentication) on
			// a loaded machine can take longer than the interval, and
			// starting it again sooner does not make it faster.
			end = fenceAt
		}
		tryCtx, cancel := context.WithDeadline(ctx, end)
		var ok bool
		var err error
		conn, ok, err = s.renewOn(tryCtx, conn, id, every)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			if !failing {
				warn("cannot renew the lease of %s: %v", id, err)
			}
			failing = true
		case !ok:
			return
		default:
			if failing {
				warn("renewed the lease of %s again", id)
			}
			failing = false
			renewed = sent
		}
	}
}

// renewOn renews id's lease over conn, or over a new connection when conn
// is nil, within ctx; a new connection's statements time out on the
// server after stmt. A connection that failed is closed and nil is
// returned in its place, so that the next try opens a fresh one.
func (s *Store) renewOn(ctx context.Context, conn *pgx.Conn, id string, stmt time.Duration) (*pgx.Conn, bool, error) {
	if conn == nil {
		s.mu.Lock()
		cfg := s.cfg
		s.mu.Unlock()
		if cfg == nil {
			return nil, false, fmt.Errorf("%w: %s is closed", ErrUnavailable, s.loc)
		}
		cfg = cfg.Copy()
		if d, ok := ctx.Deadline(); ok {
			cfg.ConnectTimeout = max(time.Until(d), time.Millisecond)
			// The server gives up on the statement by itself, too.
			cfg.RuntimeParams["statement_timeout"] = fmt.Sprint(max(min(time.Until(d), stmt).Milliseconds(), 1))
		}
		c, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			return nil, false, fmt.Errorf("%w: cannot connect to %s: %s", ErrUnavailable, s.loc, s.scrub(err))
		}
		conn = c
	}
	var until time.Time
	err := conn.QueryRow(ctx, renewLease, id).Scan(&until)
	if errors.Is(err, pgx.ErrNoRows) {
		return conn, false, nil
	}
	if err != nil {
		closeNow(conn)
		return nil, false, s.wrap(err)
	}
	return conn, true, nil
}

// closeNow closes conn without waiting on a server that may not answer.
func closeNow(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	conn.Close(ctx)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// FinishRetrying is Finish, tried again with backoff while the database
// is unavailable, for the lease or DefaultLease, whichever is longer: a
// partition that outlasts the lease still ends in time for the result to
// be kept — recorded, or kept as Late on the record when another host
// judged the execution meanwhile. A finish whose first try reached the
// server but whose answer was lost is refused on retry with the record
// already holding this result: that is success.
func (s *Store) FinishRetrying(id string, status ledger.Status, exitCode *int, errMsg string) (ledger.Record, error) {
	limit := max(s.opts.Lease, DefaultLease)
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
