package pgstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/pgstore"
)

// TestTokenTimeline: on a server never promoted (timeline 1) a job's
// tokens are 1, 2, 3, ...; a job whose tether.fences row holds a token of
// a later timeline (a database restored from a dump into a new cluster,
// whose timeline starts again at 1) goes on from it, never back.
func TestTokenTimeline(t *testing.T) {
	url := newDB(t)
	s := open(t, url, pgstore.Options{})
	claim := func() ledger.Record {
		t.Helper()
		r, err := s.Claim("tl", ledger.ClaimOptions{Owner: ledger.Owner{PID: 1}})
		if err != nil {
			t.Fatalf("Claim = %v", err)
		}
		return r
	}
	for want := uint64(1); want <= 3; want++ {
		if r := claim(); r.Token != want {
			t.Fatalf("claim %d on timeline 1: token %d; want %d", want, r.Token, want)
		}
	}
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	const later = 2<<40 | 7 // the 7th claim on timeline 3
	if _, err := c.Exec(ctx, `UPDATE tether.fences SET token = $1 WHERE job = 'tl'`, int64(later)); err != nil {
		t.Fatal(err)
	}
	if r := claim(); r.Token != later+1 {
		t.Errorf("claim after a token of timeline 3: token %d; want %d", r.Token, uint64(later+1))
	}
}

// TestMigrateAfterLegacyRead: a store that read an older database (its
// reads fell back to the older columns) and then migrated it by a claim
// reads every column again: the new claim's token, not NULL.
func TestMigrateAfterLegacyRead(t *testing.T) {
	url := newDB(t)
	first, err := open(t, url, pgstore.Options{}).Claim("m", ledger.ClaimOptions{Owner: ledger.Owner{PID: 1}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	// Back to version 1, as an older tether left it.
	if _, err := c.Exec(ctx, `DROP TRIGGER executions_count_end ON tether.executions;
		DROP TRIGGER executions_count_insert ON tether.executions;
		DROP FUNCTION tether.count_run();
		DROP TABLE tether.job_runs;
		DROP INDEX tether.executions_finished, tether.executions_succeeded;
		DROP TABLE tether.fences;
		ALTER TABLE tether.executions DROP COLUMN schedule, DROP COLUMN attempt, DROP COLUMN attempts, DROP COLUMN token;
		DELETE FROM tether.schema_version WHERE version > 1`); err != nil {
		t.Fatal(err)
	}
	s := open(t, url, pgstore.Options{})
	if r, err := s.Get(first.ID); err != nil || r.Token != 0 {
		t.Fatalf("Get(%s) of a version 1 database = token %d, %v; want 0, nil", first.ID, r.Token, err)
	}
	r, err := s.Claim("m2", ledger.ClaimOptions{Owner: ledger.Owner{PID: 1}})
	if err != nil {
		t.Fatalf("Claim on a version 1 database = %v", err)
	}
	got, err := s.Get(r.ID)
	if err != nil || got.Token == 0 || got.Token != r.Token {
		t.Errorf("Get(%s) after the claim migrated = token %d, %v; want the claim's %d", r.ID, got.Token, err, r.Token)
	}
}
