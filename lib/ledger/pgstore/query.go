package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tether-sh/tether/lib/ledger"
)

// Get returns execution id.
func (s *Store) Get(id string) (ledger.Record, error) {
	if err := ledger.ValidID(id); err != nil {
		return ledger.Record{}, err
	}
	var r ledger.Record
	err := s.do(func(ctx context.Context, c *pgx.Conn) error {
		var err error
		r, err = scanRecord(c.QueryRow(ctx, `SELECT `+s.cols()+` FROM tether.executions WHERE id = $1 AND NOT pruned`, id))
		return err
	})
	if err := s.noStore(err); err != nil {
		return ledger.Record{}, err
	}
	if errors.Is(err, pgx.ErrNoRows) || missingSchema(err) {
		return ledger.Record{}, fmt.Errorf("%w %s", ledger.ErrNotFound, id)
	}
	return r, err
}

// Latest returns job's newest execution (the last one claimed).
func (s *Store) Latest(job string) (ledger.Record, error) {
	if err := ledger.ValidJob(job); err != nil {
		return ledger.Record{}, err
	}
	var r ledger.Record
	err := s.do(func(ctx context.Context, c *pgx.Conn) error {
		var err error
		r, err = scanRecord(c.QueryRow(ctx, `SELECT `+s.cols()+` FROM tether.executions
			WHERE job = $1 AND NOT pruned ORDER BY seq DESC LIMIT 1`, job))
		return err
	})
	if err := s.noStore(err); err != nil {
		return ledger.Record{}, err
	}
	if errors.Is(err, pgx.ErrNoRows) || missingSchema(err) {
		return ledger.Record{}, noExecution("job " + job + " has no execution")
	}
	return r, err
}

// noExecution is ErrNotFound saying what the file store says, word for
// word: the two stores' output is one contract.
type noExecution string

func (e noExecution) Error() string { return string(e) }
func (e noExecution) Unwrap() error { return ledger.ErrNotFound }

// eachPage is how many rows Each fetches per statement (Store.pageSize):
// its memory bound, and short statements however slowly fn takes them.
const eachPage = 1000

// Each calls fn with each execution matching f, oldest first, through a
// cursor in a read-only transaction: the rows are sorted once, as one
// SELECT would, and fetched s.pageSize at a time, fn called between the
// fetches. The store's connection is Each's until the walk ends (other
// callers of the store wait; fn must not call it). Unlike the file store's
// walk, it is one snapshot.
func (s *Store) Each(f ledger.Filter, fn func(ledger.Record) error) error {
	if err := ledger.CheckFilter(f); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.doLocked(func(ctx context.Context, c *pgx.Conn) error {
		if _, err := c.Exec(ctx, `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`); err != nil {
			return err
		}
		if f.Newest > 0 {
			// Each job's newest by the (job, seq) index, backwards,
			// Newest rows each: bounded by Newest, not by the job's rows.
			_, err := c.Exec(ctx, `DECLARE tether_each NO SCROLL CURSOR FOR SELECT `+s.cols()+` FROM (
				SELECT e.* FROM (SELECT DISTINCT job FROM tether.executions WHERE NOT pruned AND ($1 = '' OR job = $1)) j
				CROSS JOIN LATERAL (SELECT * FROM tether.executions x WHERE x.job = j.job AND NOT x.pruned
					ORDER BY x.seq DESC LIMIT $2) e) newest ORDER BY seq`, f.Job, f.Newest)
			return err
		}
		_, err := c.Exec(ctx, `DECLARE tether_each NO SCROLL CURSOR FOR SELECT `+s.cols()+` FROM tether.executions
			WHERE NOT pruned AND ($1 = '' OR job = $1) AND ($2 = '' OR status = $2) ORDER BY seq`, f.Job, string(f.Status))
		return err
	})
	if err == nil {
		err = s.fetchEach(fn)
	}
	// The transaction ends whatever happened; on a connection that
	// failed there is none left to end, and the error is err's.
	if s.conn != nil && !s.conn.IsClosed() {
		if rerr := s.doLocked(func(ctx context.Context, c *pgx.Conn) error {
			_, err := c.Exec(ctx, `ROLLBACK`)
			return err
		}); err == nil {
			err = rerr
		}
	}
	if err := s.noStore(err); err != nil {
		return err
	}
	if missingSchema(err) {
		return nil
	}
	return err
}

// fetchEach fetches the rows of Each's cursor, a page per statement, and
// passes them to fn. Called with s.mu held.
func (s *Store) fetchEach(fn func(ledger.Record) error) error {
	fetch := `FETCH ` + strconv.Itoa(s.pageSize) + ` FROM tether_each`
	for {
		var page []ledger.Record
		err := s.doLocked(func(ctx context.Context, c *pgx.Conn) error {
			rows, err := c.Query(ctx, fetch)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				r, err := scanRecord(rows)
				if err != nil {
					return err
				}
				page = append(page, r)
			}
			return rows.Err()
		})
		if err != nil {
			return err
		}
		for _, r := range page {
			if err := fn(r); err != nil {
				return err
			}
		}
		if len(page) < s.pageSize {
			return nil
		}
	}
}

// noStore is ErrNoStore for a read (Options.Existing) that found no
// schema, else nil.
func (s *Store) noStore(err error) error {
	if s.opts.Existing && missingSchema(err) {
		return fmt.Errorf("%w at %s: the database holds no ledger (schema %s; only commands that write create one)", ledger.ErrNoStore, s.loc, Schema)
	}
	return nil
}

// Holds returns execution id and whether it still holds its job
// (ledger.HoldVerdict), read in one statement: the record, the job's
// greatest token (tether.fences) and the server's clock.
func (s *Store) Holds(id string) (ledger.Record, error) {
	if err := ledger.ValidID(id); err != nil {
		return ledger.Record{}, err
	}
	var r ledger.Record
	var newest *int64
	var now time.Time
	err := s.do(func(ctx context.Context, c *pgx.Conn) error {
		// A database no claim of this release migrated yet has no
		// fences: its executions were claimed before tokens.
		newestToken := `(SELECT token FROM tether.fences f WHERE f.job = e.job)`
		if s.legacy {
			newestToken = `NULL::bigint`
		}
		var err error
		r, err = scanRecord(c.QueryRow(ctx, `SELECT `+s.cols()+`, `+newestToken+`, now()
			FROM tether.executions e WHERE id = $1 AND NOT pruned`, id), &newest, &now)
		return err
	})
	if err := s.noStore(err); err != nil {
		return ledger.Record{}, err
	}
	if errors.Is(err, pgx.ErrNoRows) || missingSchema(err) {
		return ledger.Record{}, fmt.Errorf("%w %s", ledger.ErrNotFound, id)
	}
	if err != nil {
		return ledger.Record{}, err
	}
	top := r.Token
	if newest != nil && uint64(*newest) > top {
		top = uint64(*newest)
	}
	return r, ledger.HoldVerdict(r, top, now)
}
