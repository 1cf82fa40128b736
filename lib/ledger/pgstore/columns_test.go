package pgstore_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/pgstore"
)

// notInRecord are the columns of tether.executions that a Record does not
// carry: the claim order, the lease's length (a record carries
// lease_until), the pruned mark and the kept output (read by Output).
var notInRecord = []string{"seq", "lease", "pruned", "output"}

// TestRecordColumns: the columns a record is read from are those of the
// table a migrated database holds, no more and no fewer, so that a column
// added by a migration is either read into the record or named above.
func TestRecordColumns(t *testing.T) {
	url := newDB(t)
	s := open(t, url, pgstore.Options{})
	// A claim creates the schema at SchemaVersion; output's column is
	// added by the first OpenOutput.
	r, err := s.Claim("columns", ledger.ClaimOptions{Owner: ledger.Owner{PID: 1}})
	if err != nil {
		t.Fatalf("Claim = %v", err)
	}
	w, err := s.OpenOutput(r.ID, 64)
	if err != nil {
		t.Fatalf("OpenOutput(%s) = %v", r.ID, err)
	}
	w.Close()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	rows, err := c.Query(ctx, `SELECT column_name FROM information_schema.columns
		WHERE table_schema = 'tether' AND table_name = 'executions' ORDER BY column_name`)
	if err != nil {
		t.Fatal(err)
	}
	table, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	read := append(pgstore.RecordColumnNames(), notInRecord...)
	slices.Sort(read)
	if !slices.Equal(read, table) {
		t.Errorf("record columns and the rest = %q; want the table's %q", read, table)
	}
}
