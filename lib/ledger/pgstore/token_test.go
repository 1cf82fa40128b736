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
