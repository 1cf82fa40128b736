package pgstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tether-sh/tether/lib/ledger"
)

// Kept output is the column output (bytea) of the execution's row: so a
// role granted the executions table needs no more, prune drops it with
// the row (a pruned execution that stays as a bare row holding its
// instant has it set to NULL), and no output outlives its execution.
// Each Write is one UPDATE that appends and cuts the value to its last
// limit bytes, made before Write returns: a SIGKILL of the writer loses
// nothing already written, as with the file store. (Each UPDATE rewrites
// the value, up to limit bytes: the runner batches what arrives while
// one is in flight.) The column came with schema version 2 (added by its
// migration); should OpenOutput find it missing all the same, it adds it,
// which needs a role allowed to ALTER the table; until then OpenOutput
// fails and Output finds nothing.

// addOutputColumn adds the column (schema version 2).
const addOutputColumn = `ALTER TABLE tether.executions ADD COLUMN IF NOT EXISTS output bytea`

// OpenOutput starts execution id's kept output afresh (empty) and returns
// its writer.
func (s *Store) OpenOutput(id string, limit int64) (io.WriteCloser, error) {
	if err := ledger.ValidID(id); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, fmt.Errorf("%w: output limit %d: want > 0", ledger.ErrBadInput, limit)
	}
	var n int64
	open := func(ctx context.Context, c *pgx.Conn) error {
		tag, err := c.Exec(ctx, `UPDATE tether.executions SET output = ''::bytea WHERE id = $1 AND NOT pruned`, id)
		n = tag.RowsAffected()
		return err
	}
	err := s.do(open)
	if undefinedColumn(err) {
		err = s.do(func(ctx context.Context, c *pgx.Conn) error {
			if _, err := c.Exec(ctx, addOutputColumn); err != nil {
				return err
			}
			return open(ctx, c)
		})
	}
	if missingSchema(err) {
		err, n = nil, 0
	}
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, noExecution(fmt.Sprintf("%s %s", ledger.ErrNotFound, id))
	}
	return &outputWriter{s: s, id: id, limit: limit}, nil
}

// outputWriter appends to one execution's output column.
type outputWriter struct {
	s      *Store
	id     string
	limit  int64
	closed bool
}

func (w *outputWriter) Write(p []byte) (int, error) {
	if w.closed {
		return 0, errors.New("write to a closed output")
	}
	n := len(p)
	if int64(len(p)) > w.limit {
		p = p[int64(len(p))-w.limit:]
	}
	err := w.s.do(func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, `UPDATE tether.executions
			SET output = CASE WHEN length(coalesce(output, '')) + length($2::bytea) > $3
				THEN substring(coalesce(output, '') || $2::bytea FROM length(coalesce(output, '')) + length($2::bytea) - $3 + 1)
				ELSE coalesce(output, '') || $2::bytea END
			WHERE id = $1 AND NOT pruned`, w.id, p, w.limit)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

func (w *outputWriter) Close() error {
	w.closed = true
	return nil
}

// Output returns execution id's kept output.
func (s *Store) Output(id string) (io.ReadCloser, error) {
	if err := ledger.ValidID(id); err != nil {
		return nil, err
	}
	var out []byte
	err := s.do(func(ctx context.Context, c *pgx.Conn) error {
		return c.QueryRow(ctx, `SELECT output FROM tether.executions WHERE id = $1 AND NOT pruned`, id).Scan(&out)
	})
	if err := s.noStore(err); err != nil {
		return nil, err
	}
	if errors.Is(err, pgx.ErrNoRows) || undefinedColumn(err) || missingSchema(err) || err == nil && out == nil {
		return nil, noExecution(fmt.Sprintf("%s: execution %s has no output kept", ledger.ErrNotFound, id))
	}
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(out)), nil
}

// undefinedColumn reports whether err says a column does not exist: a
// schema made before it was added.
func undefinedColumn(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42703"
}

// checkDue, in the claim's transaction under the job's advisory lock
// (checkExclusive took it and recovered what it could), refuses with
// ledger.ErrNotDue while job's last success started less than every
// (less ledger.EverySlack) before now (the test clock, else the
// server's).
func (s *Store) checkDue(ctx context.Context, tx pgx.Tx, job string, every time.Duration) error {
	var id string
	var started, at time.Time
	// clock_timestamp(), not now(): this transaction may have begun
	// before the finish it must see, while it waited for the job's lock.
	err := tx.QueryRow(ctx, `SELECT id, coalesce(started_at, claimed_at), coalesce($2::timestamptz, clock_timestamp()) FROM tether.executions
		WHERE job = $1 AND status = 'completed' AND NOT pruned ORDER BY seq DESC LIMIT 1`, job, s.clock()).Scan(&id, &started, &at)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	// The last success claimed, not the greatest finished_at, counted
	// from its start (ledger.EveryFrom); one that started later than now
	// (a clock stepped back) does not hold the period, as on the file
	// store.
	if since := at.Sub(started); since > -ledger.FutureSkew && since < every-ledger.EverySlack(every) {
		return ledger.NotDuef("execution %s completed, started %v ago (at %s), less than %v", id, since.Round(time.Millisecond), ledger.FormatTime(started), every)
	}
	return nil
}
