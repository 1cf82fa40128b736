package tether_test

import (
	"strings"
	"testing"
)

// TestLedgerPostgresMonitor: on PostgreSQL, status, check and metrics need
// only SELECT (a monitoring role reads what the jobs' role writes, and can
// write nothing); and a database of schema version 1 is read as it is
// (runs counted from its rows, no schedule columns) and migrated to the
// current version by the first claim, its counts starting from what it
// holds.
func TestLedgerPostgresMonitor(t *testing.T) {
	t.Parallel()
	srv := sharedPostgres(t)
	psql := func(db, sql string) string {
		t.Helper()
		out, err := srv.Psql(db, sql)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out)
	}
	dir := t.TempDir()
	ledger := func(dsn string, args ...string) (string, int) {
		t.Helper()
		out, code, err := runTool(dir, "ledger", append([]string{"--ledger", dsn}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out), code
	}
	db, err := srv.CreateDBName()
	if err != nil {
		t.Fatal(err)
	}
	dsn := srv.DSN(db)
	for _, args := range [][]string{{"run", "backup", "--", "true"}, {"run", "backup", "--", "true"}, {"run", "backup", "--", "false"}} {
		ledger(dsn, args...)
	}

	// Back to version 1, as an older tether left it.
	psql(db, `DROP TRIGGER executions_count_end ON tether.executions;
		DROP TRIGGER executions_count_insert ON tether.executions;
		DROP FUNCTION tether.count_run();
		DROP TABLE tether.job_runs;
		DROP INDEX tether.executions_finished, tether.executions_succeeded;
		DROP TABLE tether.fences;
		ALTER TABLE tether.executions DROP COLUMN schedule, DROP COLUMN attempt, DROP COLUMN attempts, DROP COLUMN token;
		DELETE FROM tether.schema_version WHERE version > 1`)
	out, code := ledger(dsn, "status", "--json")
	if code != 0 || !strings.Contains(out, `"runs":{"abandoned":0,"completed":2,"failed":1,"unknown":0}`) {
		t.Fatalf("status --json of a version 1 schema = %d, %s; want 2 completed and 1 failed", code, out)
	}
	for _, args := range [][]string{{"list", "--json", "--job", "backup"}, {"latest", "--json", "backup"}} {
		if out, code := ledger(dsn, args...); code != 0 || !strings.Contains(out, `"schedule":null,"attempt":null,"attempts":null,"token":null`) {
			t.Fatalf("ledger %s of a version 1 schema = %d, %s; want its records, with no schedule", strings.Join(args, " "), code, out)
		}
	}
	id, _ := ledger(dsn, "latest", "backup", "--field", "id")
	if out, code := ledger(dsn, "holds", id); code != 1 || !strings.Contains(out, "is failed") {
		t.Errorf("ledger holds %s of a version 1 schema = %d, %s; want 1, it is failed (not: no such execution)", id, code, out)
	}
	if v := psql(db, `SELECT max(version) FROM tether.schema_version`); v != "1" {
		t.Fatalf("after status, list, latest and holds, schema version = %s; want 1 (a read migrates nothing)", v)
	}
	if out, code := ledger(dsn, "run", "backup", "--", "true"); code != 0 {
		t.Fatalf("ledger run on a version 1 schema = %d, %s", code, out)
	}
	if v := psql(db, `SELECT max(version) FROM tether.schema_version`); v != "4" {
		t.Fatalf("after a claim, schema version = %s; want 4", v)
	}
	ledger(dsn, "prune", "--keep", "1")
	out, code = ledger(dsn, "status", "--json", "backup")
	if code != 0 || !strings.Contains(out, `"runs":{"abandoned":0,"completed":3,"failed":1,"unknown":0}`) {
		t.Fatalf("status --json after the migration, a run and a prune = %d, %s; want 3 completed, 1 failed", code, out)
	}

	// A role that may only read.
	psql("postgres", `DO $$ BEGIN CREATE ROLE tether_monitor LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$`)
	psql(db, `GRANT USAGE ON SCHEMA tether TO tether_monitor;
		GRANT SELECT ON ALL TABLES IN SCHEMA tether TO tether_monitor`)
	mon := srv.DSNAs(db, "tether_monitor")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"status", "backup"}, 0, "backup"},
		{[]string{"check", "backup", "--max-age", "1h"}, 0, "OK: backup last succeeded"},
		{[]string{"metrics"}, 0, `tether_runs_total{tether_job="backup",status="completed"} 3`},
		{[]string{"claim", "backup"}, 3, "permission denied"},
	} {
		out, code := ledger(mon, c.args...)
		if code != c.code || !strings.Contains(out, c.want) {
			t.Errorf("as tether_monitor: ledger %s = %d, %s; want %d, %q", strings.Join(c.args, " "), code, out, c.code, c.want)
		}
	}
}
