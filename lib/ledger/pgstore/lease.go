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
// when no renewal has succeeded by t + ledger.FenceWindow(lease, k.Stop)
// (on ledger.BootClock, which counts through a suspend, as the server's
// clock does), KeepLease calls k.Lost (the runner then stops its payload,
// which is gone before the lease runs out) and returns; but a runner
// that finds itself past that moment with no try in the last interval
// (it was paused) tries once more first. A renewal that finds the
// execution ended by someone else calls k.Replaced. k.Warn hears of the
// first failure of a run of them, of the recovery, and of the loss. A
// handle opened without a lease keeps none: it returns at once.
func (s *Store) KeepLease(ctx context.Context, id string, k ledger.Keep) {
	lease := s.opts.Lease
	if lease <= 0 {
		return
	}
	warn := k.Warn
	if warn == nil {
		warn = func(string, ...any) {}
	}
	now := ledger.BootClock
	every := max((lease-k.Stop)/3, 10*time.Millisecond)
	window := ledger.FenceWindow(lease, k.Stop)
	renewed := now()
	if !k.Since.IsZero() {
		renewed -= time.Since(k.Since)
	}
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			closeNow(conn)
		}
	}()
	// paused: the runner was stopped (SIGSTOP, a frozen VM, a suspend)
	// since the last try was sent: a step of its wait or a try took
	// wakeCheck longer than it may.
	failing, lateTried, paused := false, false, false
	for {
		fenceAt := renewed + window
		next := renewed + every
		if failing {
			next = now() + min(every/4, time.Second)
		}
		next = min(next, fenceAt)
		// In steps of at most wakeCheck: Go's timers stop with the
		// machine's monotonic clock while it is suspended, BootClock
		// does not, and a resumed runner must look at once.
		for t := now(); t < next; t = now() {
			step := min(next-t, wakeCheck)
			select {
			case <-ctx.Done():
				return
			case <-time.After(step):
			}
			paused = paused || now()-t > step+wakeCheck
		}
		bound := every
		if t := now(); t >= fenceAt {
			if lateTried || !paused {
				warn("cannot renew the lease of %s (last renewed %v ago, lease %v): stopping its command before the lease runs out", id, (t - renewed).Round(time.Millisecond), lease)
				if k.Lost != nil {
					k.Lost()
				}
				return
			}
			// Paused past its fence (SIGSTOP, a frozen VM, a suspend),
			// with no try since: one try, at once and short, before
			// the payload is stopped. The database may not have
			// judged the lease run out, or no other host acted on it:
			// then it is renewed and the payload runs on.
			lateTried, bound = true, min(every, time.Second)
			warn("%s was paused past the moment to stop its command (by %v): renewing its lease first", id, (t - fenceAt).Round(time.Millisecond))
		}
		sent := now()
		paused = false
		limit := bound
		if conn == nil && !lateTried {
			// Connecting may take until the lease is given up: a cold
			// connection (a server process started, authentication) on
			// a loaded machine can take longer than the interval, and
			// starting it again sooner does not make it faster.
			limit = fenceAt - sent
		} else if d := fenceAt - sent; d > 0 && d < bound {
			limit = d
		}
		tryCtx, cancel := context.WithTimeout(ctx, limit)
		var ok bool
		var err error
		conn, ok, err = s.renewOn(tryCtx, conn, id, every)
		cancel()
		paused = now()-sent > limit+wakeCheck
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			if !failing {
				warn("cannot renew the lease of %s: %v", id, err)
			}
			failing = true
		case !ok:
			s.ended(ctx, id, k, warn)
			return
		default:
			if failing || lateTried {
				warn("renewed the lease of %s again", id)
			}
			failing, lateTried = false, false
			renewed = sent
		}
	}
}

// wakeCheck bounds KeepLease's sleeps, so that it sees a resume from a
// suspend soon after.
const wakeCheck = 250 * time.Millisecond

// ended is KeepLease's end when a renewal found nothing to renew: the
// execution ended (by the runner itself, whose ctx is then done; else by
// someone else: k.Replaced), or was never leased (nothing to keep).
func (s *Store) ended(ctx context.Context, id string, k ledger.Keep, warn func(string, ...any)) {
	r, err := s.Get(id)
	switch {
	case ctx.Err() != nil:
		return
	case errors.Is(err, ledger.ErrNotFound):
		r.Status, r.Error = ledger.Unknown, "pruned"
	case err != nil:
		// It cannot tell: as for a lease that cannot be renewed.
		warn("cannot renew the lease of %s, nor read it: %v; stopping its command", id, err)
		if k.Lost != nil {
			k.Lost()
		}
		return
	case !r.Status.Terminal():
		return // never leased: nothing to keep
	}
	if k.Replaced != nil {
		warn("%s is no longer this runner's: it is %s (%s); stopping its command now", id, r.State(), r.Error)
		k.Replaced()
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
