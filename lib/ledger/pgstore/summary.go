package pgstore

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/tether-sh/tether/lib/ledger"
)

// The per-job summaries (ledger status, check, metrics) cost a bounded
// number of index probes per job, whatever the number of rows:
//
//   - the latest execution is the job's greatest seq (executions_job);
//   - the last finished and the last successful are the greatest seq of
//     those (executions_job, walked back to the first that matches: the
//     store's own order, which a clock stepped back does not upset, as
//     finished_at would);
//   - live executions are counted through executions_open;
//   - the runs by terminal status are kept in tether.job_runs, one row per
//     (job, status), which a trigger on tether.executions increments in the
//     statement that ends an execution (finish, abort, recover, whichever
//     host and tether version ends it): in the same transaction, so a
//     count is never lost or doubled, and prune, which deletes rows, does
//     not decrease it.
//
// The trigger's function is SECURITY DEFINER (owned by whoever created the
// schema, with a fixed search_path), so that a least-privileged role
// granted what version 1 needed keeps claiming and finishing after the
// upgrade; reading the summaries needs SELECT on tether.job_runs.

// schemaMigration is one step of the schema after version 1.
type schemaMigration struct {
	version    int
	statements []string
}

// schemaMigrations bring a schema of version 1 (as createSchema makes it)
// to SchemaVersion, each step once, under ensureSchema's advisory lock, in
// its transaction. A database of version 1 is migrated by the first claim
// of this version: insertClaim names tether.job_runs, and a claim that
// finds a table missing runs ensureSchema.
var schemaMigrations = []schemaMigration{
	{2, []string{
		`CREATE TABLE IF NOT EXISTS tether.job_runs (
			job    text NOT NULL,
			status text NOT NULL CHECK (status IN ` + terminalStatuses + `),
			runs   bigint NOT NULL,
			PRIMARY KEY (job, status)
		)`,
		// A migrated store starts from what it holds (pruned rows kept for
		// their instant included: they did run).
		`INSERT INTO tether.job_runs (job, status, runs)
			SELECT job, status, count(*) FROM tether.executions WHERE status IN ` + terminalStatuses + `
			GROUP BY job, status
			ON CONFLICT DO NOTHING`,
		`CREATE OR REPLACE FUNCTION tether.count_run() RETURNS trigger
			LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
		BEGIN
			INSERT INTO tether.job_runs AS r (job, status, runs) VALUES (NEW.job, NEW.status, 1)
				ON CONFLICT (job, status) DO UPDATE SET runs = r.runs + 1;
			RETURN NULL;
		END $$`,
		`DROP TRIGGER IF EXISTS executions_count_end ON tether.executions`,
		`CREATE TRIGGER executions_count_end AFTER UPDATE OF status ON tether.executions
			FOR EACH ROW WHEN (OLD.status IN ` + openStatuses + ` AND NEW.status IN ` + terminalStatuses + `)
			EXECUTE PROCEDURE tether.count_run()`,
		`DROP TRIGGER IF EXISTS executions_count_insert ON tether.executions`,
		`CREATE TRIGGER executions_count_insert AFTER INSERT ON tether.executions
			FOR EACH ROW WHEN (NEW.status IN ` + terminalStatuses + `)
			EXECUTE PROCEDURE tether.count_run()`,
		`CREATE INDEX IF NOT EXISTS executions_finished ON tether.executions (job, finished_at, seq)
			WHERE status IN ` + terminalStatuses + ` AND NOT pruned`,
		`CREATE INDEX IF NOT EXISTS executions_succeeded ON tether.executions (job, finished_at, seq)
			WHERE status = 'completed' AND NOT pruned`,
		// The kept tail of an execution's output (output.go).
		addOutputColumn,
	}},
	// The schedule a run was claimed under and its attempt k of n
	// (ledger.Record.Schedule, Attempt, Attempts): NULL in the rows
	// written before.
	{3, []string{
		`ALTER TABLE tether.executions ADD COLUMN IF NOT EXISTS schedule text,
			ADD COLUMN IF NOT EXISTS attempt integer, ADD COLUMN IF NOT EXISTS attempts integer`,
	}},
}

// Summaries returns the summary of each named job (every job when none is
// named), ordered by job name, read in one read-only transaction (one
// snapshot).
func (s *Store) Summaries(jobs ...string) ([]ledger.Summary, error) {
	for _, j := range jobs {
		if err := ledger.ValidJob(j); err != nil {
			return nil, err
		}
	}
	var out []ledger.Summary
	err := s.do(func(ctx context.Context, c *pgx.Conn) error {
		return pgx.BeginTxFunc(ctx, c, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
			var err error
			out, err = summaries(ctx, tx, jobs, s.cols())
			return err
		})
	})
	if err := s.noStore(err); err != nil {
		return nil, err
	}
	if missingSchema(err) {
		// No claim ever made the tables: every named job has nothing.
		return emptySummaries(jobs), nil
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// emptySummaries are the summaries of jobs with nothing stored, sorted,
// each once.
func emptySummaries(jobs []string) []ledger.Summary {
	names := slices.Clone(jobs)
	slices.Sort(names)
	names = slices.Compact(names)
	out := make([]ledger.Summary, len(names))
	for i, j := range names {
		out[i] = ledger.Summary{Job: j}
	}
	return out
}

// summaries reads the summaries in tx.
func summaries(ctx context.Context, tx pgx.Tx, jobs []string, cols string) ([]ledger.Summary, error) {
	var counted bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass('tether.job_runs') IS NOT NULL`).Scan(&counted); err != nil {
		return nil, err
	}
	if len(jobs) == 0 {
		var err error
		if jobs, err = allJobs(ctx, tx, counted); err != nil {
			return nil, err
		}
	}
	out := emptySummaries(jobs)
	if len(out) == 0 {
		return nil, nil
	}
	names := make([]string, len(out))
	byJob := make(map[string]*ledger.Summary, len(out))
	for i := range out {
		names[i] = out[i].Job
		byJob[out[i].Job] = &out[i]
	}
	// The newest of each job by seq: of all (Latest), of the finished and
	// of the successful ones. By the store's own sequence, not by
	// finished_at, which a clock stepped back puts out of order: the
	// last finished is the last claimed of those that finished. (Each is
	// a walk back along executions_job from the newest row to the first
	// that matches.)
	records := []struct {
		where, order string
		set          func(*ledger.Summary, ledger.Record)
	}{
		{`NOT pruned`, `seq DESC`, func(s *ledger.Summary, r ledger.Record) { s.Latest = r }},
		{`status IN ` + terminalStatuses + ` AND NOT pruned`, `seq DESC`, func(s *ledger.Summary, r ledger.Record) { s.LastFinished = r }},
		{`status = 'completed' AND NOT pruned`, `seq DESC`, func(s *ledger.Summary, r ledger.Record) { s.LastSuccess = r }},
	}
	for _, q := range records {
		rows, err := tx.Query(ctx, `SELECT x.* FROM unnest($1::text[]) AS j(name) CROSS JOIN LATERAL (
			SELECT `+cols+` FROM tether.executions e WHERE e.job = j.name AND `+q.where+`
			ORDER BY `+q.order+` LIMIT 1) x`, names)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			r, err := scanRecord(rows)
			if err != nil {
				rows.Close()
				return nil, err
			}
			q.set(byJob[r.Job], r)
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	if err := prunedLast(ctx, tx, out, byJob, cols); err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, `SELECT job, count(*) FROM tether.executions
		WHERE job = ANY($1) AND status IN `+openStatuses+` GROUP BY job`, names)
	if err != nil {
		return nil, err
	}
	var job string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&job, &n}, func() error {
		byJob[job].Live = int(n)
		return nil
	}); err != nil {
		return nil, err
	}
	// Before version 2 nothing counted the runs: what the table holds,
	// which is what a migration starts from.
	runs := `SELECT job, status, runs FROM tether.job_runs WHERE job = ANY($1) AND runs > 0`
	if !counted {
		runs = `SELECT job, status, count(*) FROM tether.executions
			WHERE job = ANY($1) AND status IN ` + terminalStatuses + ` GROUP BY job, status`
	}
	rows, err = tx.Query(ctx, runs, names)
	if err != nil {
		return nil, err
	}
	var status string
	if _, err := pgx.ForEachRow(rows, []any{&job, &status, &n}, func() error {
		s := byJob[job]
		if s.Runs == nil {
			s.Runs = map[ledger.Status]uint64{}
		}
		s.Runs[ledger.Status(status)] = uint64(n)
		return nil
	}); err != nil {
		return nil, err
	}
	return out, nil
}

// prunedLast fills in, for the summaries in out (byJob indexes them),
// the last finished and last success of a job that has none left
// unpruned: the bare row prune left of it (dropSelected), so that a job
// whose every record was pruned still reports them, as on the file
// store. It walks the job's pruned rows (no partial index holds them),
// only for a job that has none left of the kind.
func prunedLast(ctx context.Context, tx pgx.Tx, out []ledger.Summary, byJob map[string]*ledger.Summary, cols string) error {
	for _, q := range []struct {
		where string
		unset func(*ledger.Summary) bool
		set   func(*ledger.Summary, ledger.Record)
	}{
		{`status IN ` + terminalStatuses, func(s *ledger.Summary) bool { return s.LastFinished.ID == "" }, func(s *ledger.Summary, r ledger.Record) { s.LastFinished = r }},
		{`status = 'completed'`, func(s *ledger.Summary) bool { return s.LastSuccess.ID == "" }, func(s *ledger.Summary, r ledger.Record) { s.LastSuccess = r }},
	} {
		var missing []string
		for i := range out {
			if q.unset(&out[i]) {
				missing = append(missing, out[i].Job)
			}
		}
		if len(missing) == 0 {
			continue
		}
		rows, err := tx.Query(ctx, `SELECT x.* FROM unnest($1::text[]) AS j(name) CROSS JOIN LATERAL (
			SELECT `+cols+` FROM tether.executions e WHERE e.job = j.name AND e.pruned AND `+q.where+`
			ORDER BY seq DESC LIMIT 1) x`, missing)
		if err != nil {
			return err
		}
		for rows.Next() {
			r, err := scanRecord(rows)
			if err != nil {
				rows.Close()
				return err
			}
			q.set(byJob[r.Job], r)
		}
		if err := rows.Err(); err != nil {
			return err
		}
	}
	return nil
}

// allJobs is every job: a skip scan of executions_job, one probe per job,
// and (counted: tether.job_runs exists) the jobs whose every row was pruned
// away but that ran.
func allJobs(ctx context.Context, tx pgx.Tx, counted bool) ([]string, error) {
	q := `WITH RECURSIVE j(job) AS (
			(SELECT job FROM tether.executions ORDER BY job LIMIT 1)
			UNION ALL
			SELECT (SELECT e.job FROM tether.executions e WHERE e.job > j.job ORDER BY e.job LIMIT 1)
			FROM j WHERE j.job IS NOT NULL)
		SELECT job FROM j WHERE job IS NOT NULL`
	if counted {
		q += ` UNION SELECT job FROM tether.job_runs`
	}
	rows, err := tx.Query(ctx, q)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
