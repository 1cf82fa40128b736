package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/pgstore"
	"github.com/tether-sh/tether/lib/proc"
)

// TestClaimStoppedInTransaction: a claim whose Stop closes while its
// transaction runs (here: while it waits for the job's advisory lock,
// which another session holds) has its INSERT rolled back, not
// committed: ErrClaimStopped, and no execution of the job. The
// conformance suite covers a Stop closed before the claim.
func TestClaimStoppedInTransaction(t *testing.T) {
	url := newDB(t)
	st := open(t, url, pgstore.Options{})
	owner, err := ledger.LocalOwner(proc.Self())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Claim("other", ledger.ClaimOptions{Owner: owner}); err != nil {
		t.Fatal(err) // the schema exists, as in any database in use
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	holder, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(context.Background())
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('tether.job:' || $1, 0))`, "x"); err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	id := ledger.NewID(time.Now(), "x")
	done := make(chan error, 1)
	go func() {
		_, err := st.Claim("x", ledger.ClaimOptions{Owner: owner, Exclusive: true, ID: id, Stop: stop})
		done <- err
	}()
	// Ready when the claim's session waits for the lock the holder has.
	for {
		var waiting int
		if err := holder.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("Claim returned %v before it waited for the job's lock", err)
		case <-ctx.Done():
			t.Fatal("the claim never waited for the job's lock")
		case <-time.After(5 * time.Millisecond):
		}
	}
	close(stop)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ledger.ErrClaimStopped) {
		t.Fatalf("Claim(Stop closed in its transaction) = %v; want ledger.ErrClaimStopped", err)
	}
	if r, err := st.Get(id); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("Get(the stopped claim's id) = %s %s, %v; want ledger.ErrNotFound: the claim was committed", r.ID, r.Status, err)
	}
}
