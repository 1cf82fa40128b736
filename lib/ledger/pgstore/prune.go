package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/tether-sh/tether/lib/ledger"
)

// Prune deletes terminal executions selected by o, as the file store
// does, passes each to fn (if not nil) as it was, job by job and oldest
// first, and returns how many. A pruned completed or unknown execution
// with an instant stays behind as a bare row marked pruned, holding its
// (job, instant) through the unique index: pruning never frees an
// instant; a job's last success and last finished one stay so too, for
// its summary (dropSelected). The server selects what goes (the newest o.Keep of each job
// stay, by a window over the job index), so memory is bounded however
// many go: with fn, the records stream and only their ids are kept; with
// neither fn nor o.DryRun, the selection and the deletion are one
// statement. fn is called inside the transaction (it must not call the
// store); a prune whose commit fails had passed on what it did not delete.
func (s *Store) Prune(o ledger.PruneOptions, fn func(ledger.Record) error) (int, error) {
	if o.Keep < 0 || o.OlderThan < 0 {
		return 0, fmt.Errorf("%w: --keep and --older-than must not be negative", ledger.ErrBadInput)
	}
	if o.Job != "" {
		if err := ledger.ValidJob(o.Job); err != nil {
			return 0, err
		}
	}
	sel, args := pruneSelection(o, s.clock())
	var n int
	var fnErr error
	err := s.do(func(ctx context.Context, c *pgx.Conn) error {
		return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			n, fnErr = 0, nil
			if fn == nil && !o.DryRun {
				var err error
				n, err = dropSelected(ctx, tx, sel, args)
				return err
			}
			ids, err := s.passPruned(ctx, tx, sel, args, func(r ledger.Record) {
				n++
				if fn != nil && fnErr == nil {
					fnErr = fn(r)
				}
			})
			if err != nil || o.DryRun {
				return err
			}
			_, err = dropSelected(ctx, tx, `SELECT unnest($1::text[])`, []any{ids})
			return err
		})
	})
	if err := s.noStore(err); err != nil {
		return 0, err
	}
	if missingSchema(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err // rolled back: nothing went
	}
	return n, fnErr
}

// dropSelected prunes the executions whose ids sel selects and returns how
// many: a completed or unknown one with an instant becomes a bare row
// marked pruned (its (job, instant) stays taken), and so does a job's last
// success and last finished execution (its times, status and exit code
// kept), which the job's summary still reports, as the file store's does:
// a prune must not make a healthy job look as if it never succeeded. The
// bare rows of a job's earlier last ones, without an instant, then go.
// The others go. The parts see one snapshot, so they are kept disjoint by
// tomb's ids (and the older bare rows by pruned, which the new ones are
// not yet in that snapshot).
func dropSelected(ctx context.Context, tx pgx.Tx, sel string, args []any) (int, error) {
	var n int
	err := tx.QueryRow(ctx, `WITH sel AS (`+sel+`),
		jobs AS (SELECT DISTINCT job FROM tether.executions WHERE id IN (SELECT * FROM sel)),
		last AS (SELECT l.id, j.job FROM jobs j CROSS JOIN LATERAL (
			(SELECT x.id FROM tether.executions x WHERE x.job = j.job AND x.status = 'completed' AND NOT x.pruned
				ORDER BY x.seq DESC LIMIT 1)
			UNION ALL
			(SELECT x.id FROM tether.executions x WHERE x.job = j.job AND x.status IN `+terminalStatuses+` AND NOT x.pruned
				ORDER BY x.seq DESC LIMIT 1)) l
			WHERE l.id IN (SELECT * FROM sel)),
		tomb AS (UPDATE tether.executions
			SET pruned = true, source = NULL, note = NULL, late_error = NULL, output = NULL,
				error = CASE WHEN id IN (SELECT id FROM last) THEN error END
			WHERE id IN (SELECT * FROM sel) AND NOT pruned
				AND (instant IS NOT NULL AND status IN `+takenForGood+` OR id IN (SELECT id FROM last))
			RETURNING id),
		del AS (DELETE FROM tether.executions
			WHERE id IN (SELECT * FROM sel) AND id NOT IN (SELECT id FROM tomb) AND NOT pruned
			RETURNING id),
		old AS (DELETE FROM tether.executions
			WHERE pruned AND instant IS NULL AND job IN (SELECT job FROM last))
		SELECT (SELECT count(*) FROM tomb) + (SELECT count(*) FROM del)`, args...).Scan(&n)
	return n, err
}

// passPruned locks the rows sel selects and hands each to pass, job by job
// and oldest first, as it reads them; it returns their ids.
func (s *Store) passPruned(ctx context.Context, tx pgx.Tx, sel string, args []any, pass func(ledger.Record)) ([]string, error) {
	rows, err := tx.Query(ctx, `SELECT `+s.cols()+` FROM tether.executions
		WHERE id IN (`+sel+`) ORDER BY job, seq FOR UPDATE`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, err
		}
		ids = append(ids, r.ID)
		pass(r)
	}
	return ids, rows.Err()
}

// pruneSelection is the query of the ids Prune drops, and its arguments:
// beyond the newest o.Keep terminal executions of each job, those not
// finished within o.OlderThan of at (the server's now() when at is nil).
func pruneSelection(o ledger.PruneOptions, at any) (string, []any) {
	terminal := `NOT pruned AND status IN ` + terminalStatuses
	if o.Job != "" && o.OlderThan == 0 {
		// Retention after each run: the server skips the newest Keep
		// in the job index and selects only what is beyond them.
		return `SELECT id FROM tether.executions WHERE ` + terminal + ` AND job = $1 AND seq <= coalesce((SELECT seq FROM tether.executions
			WHERE ` + terminal + ` AND job = $1 ORDER BY seq DESC OFFSET $2 LIMIT 1), -1)`, []any{o.Job, o.Keep}
	}
	return `SELECT id FROM (SELECT id, finished_at, row_number() OVER (PARTITION BY job ORDER BY seq DESC) AS rank
			FROM tether.executions WHERE ` + terminal + ` AND ($1 = '' OR job = $1)) c
		WHERE rank > $2 AND NOT ($3::bigint > 0 AND coalesce(finished_at, '-infinity') >
			coalesce($4::timestamptz, now()) - $3::bigint * interval '1 microsecond')`,
		[]any{o.Job, o.Keep, o.OlderThan.Microseconds(), at}
}
