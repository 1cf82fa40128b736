package pgstore_test

import (
	"os"
	"testing"
	"time"

	"github.com/tether-sh/tether/internal/pgtest"
	"github.com/tether-sh/tether/lib/cmd/ledgercmd/ledgerkong"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/ledgertest"
	"github.com/tether-sh/tether/lib/ledger/pgstore"
)

// srv is the package's one throwaway cluster (TestMain); each test gets
// a database of its own. startErr is why there is none.
var (
	srv      *pgtest.Server
	startErr error
)

func TestMain(m *testing.M) {
	// This test binary, run as the ledger tool by the CLI tests.
	tool.Serve(func(_ string, args []string) int { return ledgerkong.Main(args) })
	srv, startErr = pgtest.StartMain()
	code := m.Run()
	if srv != nil {
		srv.Stop()
	}
	os.Exit(code)
}

// newDB returns the URL of a fresh database, or skips (fails on CI)
// when no server could be started.
func newDB(t testing.TB) string {
	t.Helper()
	if srv == nil {
		pgtest.Unavailable(t, startErr)
	}
	return srv.NewDB(t)
}

// open opens a store on url or fails t.
func open(t testing.TB, url string, o pgstore.Options) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(url, o)
	if err != nil {
		t.Fatalf("Open(%s) = %v", url, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformance holds the PostgreSQL store to the seam's contract, the
// same suite the file store passes.
func TestConformance(t *testing.T) {
	if srv == nil {
		pgtest.Unavailable(t, startErr)
	}
	ledgertest.RunConformance(t, ledgertest.Harness{
		Open: func(t *testing.T, now func() time.Time) ledger.Ledger {
			s, err := pgstore.Open(newDB(t), pgstore.Options{Clock: now})
			if err != nil {
				t.Fatalf("Open = %v", err)
			}
			return s
		},
		Reopen: func(t *testing.T, st ledger.Ledger) ledger.Ledger {
			s, err := pgstore.Open(st.Location(), pgstore.Options{})
			if err != nil {
				t.Error(err)
				return nil
			}
			return s
		},
		OpenLeased: func(t *testing.T, lease time.Duration) ledger.Ledger {
			s, err := pgstore.Open(newDB(t), pgstore.Options{Lease: lease})
			if err != nil {
				t.Fatalf("Open = %v", err)
			}
			return s
		},
		Shared: true,
	})
}
