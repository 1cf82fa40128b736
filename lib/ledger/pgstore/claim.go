package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tether-sh/tether/lib/ledger"
)

// insertClaim is a claim: one INSERT, which the unique index on (job,
// instant) turns into nothing when another execution holds the instant.
// $1 id, $2 time, $3 job, $4 source, $5 instant, $6 status, $7..$11 the
// owner, $12 $13 the child, $14 the lease, $15 the schedule, $16 $17 the
// attempt and attempts. It names tether.job_runs (and reads nothing from
// it) so that in a database of schema version 1 it fails as a missing
// table, and the columns of version 3, so that in one of version 2 it
// fails as a missing column: Claim migrates the schema first.
var insertClaim = `WITH v2 AS (SELECT FROM tether.job_runs LIMIT 0) INSERT INTO tether.executions
	(id, claimed_at, job, source, instant, status, owner_host, owner_boot_id, owner_pidns, owner_pid, owner_start,
	 child_pid, child_start, started_at, lease, lease_until, schedule, attempt, attempts)
	VALUES ($1, ` + now + `, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13,
	 CASE WHEN $6 = 'running' THEN ` + now + ` END, $14::interval, now() + $14::interval, $15, $16, $17)
	ON CONFLICT (job, instant) WHERE status IN ` + blockingStatuses + ` DO NOTHING
	RETURNING ` + cols

// Claim records a new execution of job. With an instant, of claims on any
// hosts for the same (job, instant) one wins; a holder whose owner is gone
// is recovered first. With Exclusive, the job's open executions are
// judged and the claim inserted under an advisory lock on the job. The
// first claim in a database creates the schema.
func (s *Store) Claim(job string, o ledger.ClaimOptions) (ledger.Record, error) {
	o, err := ledger.CheckClaim(job, o)
	if err != nil {
		return ledger.Record{}, err
	}
	if o.ID == "" {
		// Known before it is sent, so that a claim whose answer is lost
		// can be found and settled (settleClaim).
		o.ID = ledger.NewID(s.idTime(), job)
	}
	created := false
	for try := 0; ; try++ {
		var r ledger.Record
		var retry bool
		// In a transaction, never autocommitted: a claim the server
		// receives late (a stalled backend, a frozen link) is committed
		// only by a COMMIT this process sends once it has the INSERT's
		// answer, before it gives up — and a COMMIT that is itself late
		// finds the session ended by idle_in_transaction_session_timeout.
		err := s.do(func(ctx context.Context, c *pgx.Conn) error {
			return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
				if err := o.Stopped(); err != nil {
					return err
				}
				// Exclusive and Every both under the job's advisory lock,
				// taken here: such claims on every host go one at a time,
				// so a period gets at most one run.
				if o.Exclusive || o.Every > 0 {
					if err := s.checkExclusive(ctx, tx, job, o); err != nil {
						if o.Exclusive || !errors.Is(err, ledger.ErrRefused) {
							return err
						}
						return ledger.NotDuef("%v", err)
					}
				}
				if o.Every > 0 {
					if err := s.checkDue(ctx, tx, job, o.Every); err != nil {
						return err
					}
				}
				if o.Once {
					if err := s.checkOnce(ctx, tx, job, o); err != nil {
						return err
					}
				}
				var err error
				if r, retry, err = s.claimOnce(ctx, tx, job, o); err != nil {
					return err
				}
				// The last moment to give up: rolled back, not committed.
				return o.Stopped()
			})
		})
		if errors.Is(err, ledger.ErrClaimStopped) {
			return ledger.Record{}, err
		}
		if errors.Is(err, ErrUnavailable) {
			// The claim may or may not have been committed: make it
			// certain before the caller gives up on it.
			return ledger.Record{}, s.settleClaim(job, o, err)
		}
		switch {
		case err == nil && !retry:
			return r, nil
		case err == nil && try < maxSwaps:
			continue // the holder of the instant was recovered, or ended
		case (missingSchema(err) || undefinedColumn(err)) && !created:
			created = true
			if err := s.do(func(ctx context.Context, c *pgx.Conn) error { return s.ensureSchema(ctx) }); err != nil {
				return ledger.Record{}, fmt.Errorf("cannot claim %s: %w", job, err)
			}
			continue
		case err == nil:
			err = ledger.Refusedf("the holder of its instant kept changing")
		}
		if errors.Is(err, ledger.ErrNotDue) {
			return ledger.Record{}, fmt.Errorf("cannot claim %s every %v: %w", job, o.Every, err)
		}
		if errors.Is(err, ledger.ErrRefused) {
			if o.Exclusive && !errors.Is(err, errInstant) {
				return ledger.Record{}, fmt.Errorf("cannot claim %s exclusively: %w", job, err)
			}
			return ledger.Record{}, fmt.Errorf("cannot claim %s for %s: %w", job, ledger.FormatTime(o.Instant), err)
		}
		return ledger.Record{}, fmt.Errorf("cannot claim %s: %w", job, err)
	}
}

// settleMessage is the error of an execution whose claim was settled.
const settleMessage = "claim outcome unknown (the database did not answer); the tool gave up and its command never ran"

// settleClaim makes certain the outcome of a claim (o.ID) whose answer was
// lost (lost): on connections of its own, it writes execution o.ID as
// failed — over the claim if the claim was committed (its command never
// ran: the caller gives up), in its place if not, so that the claim, if it
// still reaches the server, conflicts with it and is never committed. A
// claim still in an open transaction holds its row: the write waits for
// that transaction to end (the server ends an idle one after the
// statement timeout). A failed execution holds no instant, so the slot
// can be retried. Tries go on for the statement timeout plus the connect
// timeout, twice over; the error returned says which outcome was made
// certain, or that none could be.
func (s *Store) settleClaim(job string, o ledger.ClaimOptions, lost error) error {
	deadline := time.Now().Add(2 * (s.opts.StatementTimeout + s.opts.ConnectTimeout))
	backoff := 100 * time.Millisecond
	for {
		committed, err := s.settleOnce(job, o, deadline)
		if err == nil {
			what := "it was never committed, and execution " + o.ID + " is recorded failed in its place (the slot may be retried)"
			if committed {
				what = "it had been committed, and execution " + o.ID + " is now failed (the slot may be retried)"
			}
			return fmt.Errorf("cannot claim %s: %w; its outcome is settled: %s", job, lost, what)
		}
		if time.Now().Add(backoff).After(deadline) {
			return fmt.Errorf("cannot claim %s: %w; its outcome is unknown (%v): see ledger show %s", job, lost, err, o.ID)
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, time.Second)
	}
}

// settleFailed writes execution $1 as failed, over a claim that is not
// terminal or in its place. $1 id, $2 job, $3 source, $4 instant, $5 the
// error, $6..$10 the owner. inserted is true when no claim was there.
var settleFailed = `INSERT INTO tether.executions AS e
	(id, claimed_at, job, source, instant, status, owner_host, owner_boot_id, owner_pidns, owner_pid, owner_start, finished_at, error)
	VALUES ($1, now(), $2, $3, $4, 'failed', $6, $7, $8, $9, $10, now(), $5)
	ON CONFLICT (id) DO UPDATE SET status = 'failed', finished_at = now(), error = $5, lease_until = NULL
	WHERE e.status IN ` + openStatuses + `
	RETURNING (xmax = 0)`

// settleOnce is one try of settleClaim, on a fresh connection, before
// deadline.
func (s *Store) settleOnce(job string, o ledger.ClaimOptions, deadline time.Time) (committed bool, err error) {
	s.mu.Lock()
	cfg := s.cfg
	s.mu.Unlock()
	if cfg == nil {
		return false, fmt.Errorf("%w: %s is closed", ErrUnavailable, s.loc)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	cfg = cfg.Copy()
	cfg.ConnectTimeout = max(time.Until(deadline), time.Millisecond)
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return false, s.wrap(err)
	}
	defer closeNow(conn)
	args := append([]any{o.ID, job, null(o.Source), instantText(o.Instant), settleMessage}, ownerArgs(o.Owner)...)
	var inserted bool
	err = conn.QueryRow(ctx, settleFailed, args...).Scan(&inserted)
	if errors.Is(err, pgx.ErrNoRows) {
		return true, nil // committed, and ended since (recovered): terminal either way
	}
	if missingSchema(err) {
		// No table, no claim; and one that reaches the server late is
		// never committed, as its COMMIT is never sent.
		return false, nil
	}
	if err != nil {
		return false, s.wrap(err)
	}
	return !inserted, nil
}

// errInstant marks a refusal that is about the instant.
var errInstant = errors.New("instant taken")

type instantRefusal struct{ error }

func (e instantRefusal) Is(target error) bool { return target == errInstant }

func (e instantRefusal) Unwrap() error { return e.error }

// querier is a connection or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// claimOnce inserts the claim; when its instant is taken it judges the
// holder: retry is true if the holder was recovered (or is gone), so the
// instant may be free now.
func (s *Store) claimOnce(ctx context.Context, q querier, job string, o ledger.ClaimOptions) (ledger.Record, bool, error) {
	status := ledger.Claimed
	var childPID, childStart any
	if o.Child.PID != 0 {
		status, childPID, childStart = ledger.Running, int32(o.Child.PID), null(int64(o.Child.Start))
	}
	id := o.ID
	if id == "" {
		id = ledger.NewID(s.idTime(), job)
	} else if err := ledger.ValidID(id); err != nil {
		return ledger.Record{}, false, err
	}
	args := []any{id, s.clock(), job, null(o.Source), instantText(o.Instant), string(status)}
	args = append(args, ownerArgs(o.Owner)...)
	args = append(args, childPID, childStart, s.lease(), null(o.Schedule), null(int32(o.Attempt)), null(int32(o.Attempts)))
	r, err := scanRecord(q.QueryRow(ctx, insertClaim, args...))
	if err == nil {
		return r, false, nil
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == "executions_pkey" {
		return ledger.Record{}, false, fmt.Errorf("%w: execution %s exists already", ledger.ErrBadInput, id)
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return ledger.Record{}, false, err
	}
	// The instant is held: by whom?
	var pruned bool
	var serverNow = new(timeNow)
	holder, err := scanRecord(q.QueryRow(ctx, `SELECT `+cols+`, pruned, now() FROM tether.executions
		WHERE job = $1 AND instant = $2 AND status IN `+blockingStatuses, job, instantText(o.Instant)), &pruned, &serverNow.t)
	if errors.Is(err, pgx.ErrNoRows) {
		return ledger.Record{}, true, nil // it ended meanwhile
	}
	if err != nil {
		return ledger.Record{}, false, err
	}
	if pruned {
		return ledger.Record{}, false, instantRefusal{ledger.Refusedf("execution %s (since pruned) was %s", holder.ID, holder.Status)}
	}
	if !holder.Status.Terminal() {
		next, _, err := s.recoverRow(ctx, q, holder, o.Grace, serverNow.t)
		if err != nil {
			return ledger.Record{}, false, err
		}
		if next.Status.Terminal() && !ledger.BlocksInstant(next.Status) {
			return ledger.Record{}, true, nil
		}
		holder = next
	}
	return ledger.Record{}, false, instantRefusal{ledger.Refusedf("execution %s is %s", holder.ID, holder.State())}
}

// checkOnce, in the claim's transaction (one with Once), refuses while
// job has a terminal execution of o.Instant that blocks the claim
// (ledger.BlocksSlot), the newest first: failed ones, which the unique
// index does not hold, and, so that the refusal names what the file
// store's does, the completed and unknown one the index holds. Under the
// job's advisory lock, which every claim with Once takes, so that of
// claims once per slot on every host one at a time judges the slot. A
// live holder is left to claimOnce, which judges its owner.
func (s *Store) checkOnce(ctx context.Context, tx pgx.Tx, job string, o ledger.ClaimOptions) error {
	if !o.Exclusive && o.Every == 0 {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('tether.job:' || $1, 0))`, job); err != nil {
			return err
		}
	}
	rows, err := tx.Query(ctx, `SELECT `+cols+`, pruned FROM tether.executions
		WHERE job = $1 AND instant = $2 AND (status = 'failed' AND started_at IS NOT NULL OR status IN `+takenForGood+`)
		ORDER BY seq DESC`, job, instantText(o.Instant))
	if err != nil {
		return err
	}
	type row struct {
		r      ledger.Record
		pruned bool
	}
	held, err := pgx.CollectRows(rows, func(cr pgx.CollectableRow) (row, error) {
		var x row
		var err error
		x.r, err = scanRecord(cr, &x.pruned)
		return x, err
	})
	if err != nil {
		return err
	}
	for _, x := range held {
		if !ledger.BlocksSlot(x.r, o) {
			continue
		}
		if x.pruned {
			return instantRefusal{ledger.Refusedf("execution %s (since pruned) was %s", x.r.ID, x.r.Status)}
		}
		return instantRefusal{ledger.Refusedf("execution %s is %s", x.r.ID, x.r.State())}
	}
	return nil
}

// checkExclusive, in the claim's transaction (one with Exclusive or
// Every), takes the job's advisory lock (held until the transaction ends, so exclusive claims of the job
// on every host go one at a time), recovers the job's open executions
// whose owners are gone, and refuses while one is left.
func (s *Store) checkExclusive(ctx context.Context, tx pgx.Tx, job string, o ledger.ClaimOptions) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('tether.job:' || $1, 0))`, job); err != nil {
		return err
	}
	open, serverNow, err := s.openRecords(ctx, tx, `job = $1`, job)
	if err != nil {
		return err
	}
	for _, r := range open {
		next, why, err := s.recoverRow(ctx, tx, r, o.Grace, serverNow)
		if err != nil {
			return err
		}
		if !next.Status.Terminal() {
			// The recoveries made so far stand: commit them, then refuse.
			if err := tx.Commit(ctx); err != nil {
				return err
			}
			return ledger.Refusedf("execution %s is %s and %s", r.ID, next.State(), why)
		}
	}
	return nil
}
