//go:build linux

package pgstore_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/pgstore"
	"github.com/tether-sh/tether/lib/proc"
)

// TestClaimSettledWhenBackendStalls is issue #21's second report: the
// store's backend stalls (SIGSTOP) between login and the claim, so the
// claim gives up; before it returns, the claim's outcome is made certain
// on a fresh connection (written failed: "claim outcome unknown"), so
// that when the backend resumes no claim can be committed behind the
// tool's back, and a retry of the slot is not refused.
func TestClaimSettledWhenBackendStalls(t *testing.T) {
	url := newDB(t)
	check := open(t, url, pgstore.Options{})
	owner, err := ledger.LocalOwner(proc.Self())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := check.Claim("other", ledger.ClaimOptions{Owner: owner}); err != nil {
		t.Fatal(err) // (the schema exists, as in any database in use)
	}
	app := fmt.Sprintf("stall%d", time.Now().UnixNano())
	stalled := open(t, url+"&statement_timeout=1000&application_name="+app, pgstore.Options{})
	pids, err := srv.Psql("postgres", "SELECT pid FROM pg_stat_activity WHERE application_name = '"+app+"'")
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(pids)
	if len(fields) != 1 {
		t.Fatalf("backends of %s = %q; want one", app, pids)
	}
	backend, err := strconv.Atoi(fields[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(backend, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			syscall.Kill(backend, syscall.SIGCONT)
		}
	}
	defer resume()

	instant := time.Unix(1700000000, 0)
	id := ledger.NewID(time.Now(), "slot")
	_, err = stalled.Claim("slot", ledger.ClaimOptions{Owner: owner, Instant: instant, ID: id})
	if !errors.Is(err, ledger.ErrUnavailable) || !strings.Contains(err.Error(), "its outcome is settled") {
		t.Fatalf("Claim with its backend stalled = %v; want unavailable, its outcome settled", err)
	}
	t.Logf("Claim: %v", err)
	resume()

	// The resumed backend finds its client gone: nothing it had is
	// committed. Wait until it has ended, so that nothing is pending.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		n, err := srv.Psql("postgres", "SELECT count(*) FROM pg_stat_activity WHERE pid = "+fields[0])
		if err != nil {
			t.Fatal(err)
		}
		if n == "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the resumed backend %d is still there after 30s", backend)
		}
	}
	r, err := check.Get(id)
	if err != nil || r.Status != ledger.Failed || !strings.Contains(r.Error, "claim outcome unknown") {
		t.Errorf("Get(%s) = %+v, %v; want failed, claim outcome unknown", id, r, err)
	}
	again, err := check.Claim("slot", ledger.ClaimOptions{Owner: owner, Instant: instant})
	if err != nil || again.Status != ledger.Claimed {
		t.Errorf("a retry of the slot = %+v, %v; want claimed", again, err)
	}
}
