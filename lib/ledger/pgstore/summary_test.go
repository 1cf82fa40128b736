package pgstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/pgstore"
)

// BenchmarkSummaries reads every job's summary of a store of 10 jobs
// holding 1,000 and 100,000 executions: the cost follows the number of
// jobs, not of rows (index probes; the counts come from tether.job_runs).
func BenchmarkSummaries(b *testing.B) {
	for _, rows := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			url := newDB(b)
			s := open(b, url, pgstore.Options{})
			fillRows(b, s, url, rows)
			b.ResetTimer()
			for b.Loop() {
				sums, err := s.Summaries()
				if err != nil || len(sums) != 11 {
					b.Fatalf("Summaries() = %d summaries, %v; want 11", len(sums), err)
				}
			}
		})
	}
}

// fillRows gives the store at url one finished execution of job setup
// and rows finished executions of ten jobs, inserted by one statement.
func fillRows(b *testing.B, s *pgstore.Store, url string, rows int) {
	b.Helper()
	code := 0
	r, err := s.Claim("setup", ledger.ClaimOptions{Owner: ledger.Owner{PID: 1}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.Finish(r.ID, ledger.Failed, &code, ""); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, `INSERT INTO tether.executions (id, job, status, owner_pid, claimed_at, started_at, finished_at, exit_code)
		SELECT 'bench-' || g, 'job' || (g % 10), CASE WHEN g % 7 = 0 THEN 'failed' ELSE 'completed' END, 1,
			now() - g * interval '1 second', now() - g * interval '1 second', now() - g * interval '1 second' + interval '10 ms', 0
		FROM generate_series(1, $1) g`, rows); err != nil {
		b.Fatal(err)
	}
	if _, err := c.Exec(ctx, `ANALYZE tether.executions`); err != nil {
		b.Fatal(err)
	}
}
