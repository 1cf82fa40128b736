package tether_test

import (
	"strings"
	"testing"
)

// TestLedgerPostgresGrants: the grants the README's "On several hosts"
// gives a least-privileged role are enough for every subcommand, both
// ways: CREATE on the database (the first claim makes schema tether), or a
// schema made by another role and only USAGE and SELECT, INSERT, UPDATE,
// DELETE on its tables. A role with neither is refused with exit 3.
func TestLedgerPostgresGrants(t *testing.T) {
	t.Parallel()
	srv := sharedPostgres(t)
	psql := func(db, sql string) {
		t.Helper()
		if _, err := srv.Psql(db, sql); err != nil {
			t.Fatal(err)
		}
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
	// every subcommand a job and its operator use, as role user on db
	everything := func(db, user string) {
		t.Helper()
		dsn := srv.DSNAs(db, user)
		id, code := ledger(dsn, "claim", "j", "--owner", "1")
		if code != 0 {
			t.Fatalf("as %s: ledger claim j: exit %d: %s", user, code, id)
		}
		for _, args := range [][]string{
			{"start", id},
			{"finish", id, "--status", "completed", "--exit-code", "0"},
			{"run", "r", "--instant", "1700000000", "--", "true"},
			{"show", id},
			{"latest", "j"},
			{"list"},
			{"recover"},
			{"prune", "--keep", "0"},
		} {
			if out, code := ledger(dsn, args...); code != 0 {
				t.Errorf("as %s: ledger %s: exit %d: %s", user, strings.Join(args, " "), code, out)
			}
		}
	}

	// First use: CREATE on the database.
	first, err := srv.CreateDBName()
	if err != nil {
		t.Fatal(err)
	}
	// Roles belong to the whole server, which every run of the test in
	// this process shares (-count=2): each run names its own after its
	// first database, which the server never gives twice.
	firstRole, jobsRole, noneRole := "tether_first_"+first, "tether_jobs_"+first, "tether_none_"+first
	for _, role := range []string{firstRole, jobsRole, noneRole} {
		psql("postgres", "CREATE ROLE "+role+" LOGIN")
	}
	psql(first, "GRANT CREATE ON DATABASE "+first+" TO "+firstRole)
	everything(first, firstRole)

	// A schema made by the owner (one claim), then the least grants.
	made, err := srv.CreateDBName()
	if err != nil {
		t.Fatal(err)
	}
	if out, code := ledger(srv.DSN(made), "run", "tether-setup", "--", "true"); code != 0 {
		t.Fatalf("as the owner: ledger run tether-setup: exit %d: %s", code, out)
	}
	if out, code := ledger(srv.DSNAs(made, noneRole), "claim", "j"); code != 3 {
		t.Errorf("with no grants: ledger claim j: exit %d: %s; want 3", code, out)
	}
	psql(made, "GRANT USAGE ON SCHEMA tether TO "+jobsRole+";\n"+
		"GRANT SELECT, INSERT, UPDATE, DELETE ON tether.executions, tether.schema_version TO "+jobsRole)
	everything(made, jobsRole)
}
