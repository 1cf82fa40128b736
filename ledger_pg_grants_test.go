package tether_test

import (
	"strings"
	"testing"

	"github.com/tether-sh/tether/lib/cmd/ledgercmd/ledgerkong"
)

// TestLedgerPostgresGrants: the grants the README's "Several hosts"
// gives a least-privileged role are enough for every subcommand (each
// runner, spawn's adopt worker, each read: status, check and metrics read
// tether.job_runs), both ways: CREATE on the database (the first claim
// makes schema tether), or a schema made by another role and only the
// README's grants, applied as written. A role with neither is refused
// with exit 3.
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
	ran := map[string]bool{} // the subcommands run, to check that none is left out
	ledger := func(dsn string, args ...string) (string, int) {
		t.Helper()
		ran[args[0]] = true
		out, code, err := runTool(dir, "ledger", append([]string{"--ledger", dsn}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out), code
	}
	// every subcommand a job and its operator use, as role user on db:
	// each runner (run, spawn and its adopt worker, the split path's
	// claim, start, beat, fence, adopt, finish, recover, prune) and each
	// read (show, latest, list, output, status, check, metrics, report).
	everything := func(db, user string) {
		t.Helper()
		dsn := srv.DSNAs(db, user)
		claim := func(job string) string {
			t.Helper()
			id, code := ledger(dsn, "claim", job, "--owner", "1")
			if code != 0 {
				t.Fatalf("as %s: ledger claim %s: exit %d: %s", user, job, code, id)
			}
			return id
		}
		id, handed := claim("j"), claim("h")
		steps := [][]string{
			{"start", id},
			{"holds", id},
			{"beat", id, "--note", "halfway"},
			{"finish", id, "--status", "completed", "--exit-code", "0"},
			{"fence", handed},
			{"adopt", handed, "--owner", "1"},
			{"finish", handed, "--status", "completed", "--exit-code", "0"},
			{"run", "r", "--instant", "1700000000", "--", "echo", "kept"},
			{"spawn", "--scope", "never", "--wait", "s", "--", "true"},
			{"show", id},
			{"latest", "j"},
			{"list"},
			{"list", "--json"},
			{"status"},
			{"check", "--max-age", "1h", "r"},
			{"metrics"},
			{"report"},
			{"verify"},
		}
		for _, args := range steps {
			if out, code := ledger(dsn, args...); code != 0 {
				t.Errorf("as %s: ledger %s: exit %d: %s", user, strings.Join(args, " "), code, out)
			}
		}
		ran, code := ledger(dsn, "latest", "r", "--field", "id")
		if code != 0 {
			t.Fatalf("as %s: ledger latest r --field id: exit %d: %s", user, code, ran)
		}
		if out, code := ledger(dsn, "output", ran); code != 0 || out != "kept" {
			t.Errorf("as %s: ledger output %s = %q, exit %d; want kept, 0", user, ran, out, code)
		}
		if out, code := ledger(dsn, "latest", "s", "--field", "status"); code != 0 || out != "completed" {
			t.Errorf("as %s: ledger latest s --field status = %q, exit %d; want completed, 0", user, out, code)
		}
		for _, args := range [][]string{{"recover"}, {"prune", "--all"}} {
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
	psql(made, readmeSQL(t, jobsRole)) // the README's grants, as written, for this run's role
	everything(made, jobsRole)

	// every subcommand ledger has, a new one included
	k, err := ledgerkong.Model()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range k.Model.Node.Children {
		if !c.Hidden && !ran[c.Name] {
			t.Errorf("ledger %s is not run as the README's role: add it to everything", c.Name)
		}
	}
}
