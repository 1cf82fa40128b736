package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/tether-sh/tether/lib/ledger"
)

// The database keeps each execution in one row, with no derived copy
// (index, summary, link) that could disagree with it: its constraints
// (the status CHECK, the unique (job, instant) of blocking statuses)
// hold by themselves. What a row can still get wrong, by hand or by a
// restore of part of the table, Verify checks; none of it can be derived
// again, so a repair changes nothing and says so.

// verifyChecks names what Verify checks, for the summary line.
const verifyChecks = "rows: job and id names, times of each state, pruned rows"

// verifyQueries are the checks: each selects the rows it finds wrong
// (job, id) and says what is wrong with them.
var verifyQueries = []struct{ what, query string }{
	{"a job name that is not one", `SELECT job, id FROM tether.executions WHERE job !~ '^[A-Za-z0-9._:@-]{1,128}$' OR job IN ('.', '..')`},
	{"an id that is not one", `SELECT job, id FROM tether.executions WHERE id !~ '^[0-9a-z-]{1,64}$'`},
	{"a finished execution without finished_at", `SELECT job, id FROM tether.executions WHERE status NOT IN ('claimed', 'running') AND finished_at IS NULL`},
	{"a live execution with finished_at", `SELECT job, id FROM tether.executions WHERE status IN ('claimed', 'running') AND finished_at IS NOT NULL`},
	{"a running execution without started_at", `SELECT job, id FROM tether.executions WHERE status = 'running' AND started_at IS NULL`},
	{"a pruned row of a live execution", `SELECT job, id FROM tether.executions WHERE pruned AND status IN ('claimed', 'running')`},
}

// Verify runs the checks above, read-only, in one snapshot. o.Repair
// changes nothing: each problem says it cannot be mended.
func (s *Store) Verify(o ledger.VerifyOptions, fn func(ledger.Problem) error) (ledger.VerifyReport, error) {
	rep := ledger.VerifyReport{Checks: verifyChecks}
	if o.Job != "" {
		if err := ledger.ValidJob(o.Job); err != nil {
			return rep, err
		}
	}
	var problems []ledger.Problem
	err := s.do(func(ctx context.Context, c *pgx.Conn) error {
		problems = problems[:0]
		return pgx.BeginTxFunc(ctx, c, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
			q := `SELECT count(DISTINCT job), count(*) FROM tether.executions WHERE NOT pruned AND ($1 = '' OR job = $1)`
			if err := tx.QueryRow(ctx, q, o.Job).Scan(&rep.Jobs, &rep.Executions); err != nil {
				return err
			}
			for _, c := range verifyQueries {
				rows, err := tx.Query(ctx, `SELECT job, id FROM (`+c.query+`) AS bad WHERE $1 = '' OR job = $1 ORDER BY job, id LIMIT 1000`, o.Job)
				if err != nil {
					return err
				}
				for rows.Next() {
					var job, id string
					if err := rows.Scan(&job, &id); err != nil {
						rows.Close()
						return err
					}
					problems = append(problems, ledger.Problem{Job: job, What: fmt.Sprintf("execution %q: %s", id, c.what), Repair: "mend the row by hand (nothing to derive it from)", Cannot: true})
				}
				rows.Close()
				if err := rows.Err(); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err := s.noStore(err); err != nil {
		return rep, err
	}
	if missingSchema(err) {
		return rep, nil // nothing was ever claimed here
	}
	if err != nil {
		return rep, err
	}
	for _, p := range problems {
		rep.Problems++
		if err := fn(p); err != nil {
			return rep, err
		}
	}
	return rep, nil
}
