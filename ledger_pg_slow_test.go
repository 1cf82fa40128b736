//go:build linux

package tether_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether-sh/tether/internal/testutil"
)

// TestLedgerPostgresSlowConnectKeepsLease: a host whose connections to
// the database turn slow while its payload runs (every exchange through
// its relay held 1.2 s) but keep working keeps its lease. Its first
// renewal must connect, then renew: two round trips, some 4.8 s, longer
// than the renewal interval ((12 s - 0.3 s - 0.5 s)/3 = 3.7 s) but well
// before the lease is given up (11.2 s after the last renewal). A try
// that connects has until the lease must be given up, so the run is not
// stopped while its database answers; when every try had the interval alone, it was (with
// 0.7 s exchanges and a 6 s lease), as a cold connection on a loaded
// 2-core machine was in TestLedgerPostgresFleetHostDies.
func TestLedgerPostgresSlowConnectKeepsLease(t *testing.T) {
	t.Parallel()
	f := newFleet(t)
	r, slow, _ := relayedDB(t)

	// The payload outlives the lease: it needs the lease renewed.
	h, said := f.start("slow", `ledger run slowjob --lease 12s --grace 300ms -- sh -c 'echo $TETHER_EXECUTION >"$OUT/slow.id"; sleep 14; touch "$OUT/slow.done"'; echo $? >"$OUT/slow.rc"`,
		"TETHER_LEDGER="+slow)
	// Slow while the payload runs: the renewals' connection, opened at
	// the first renewal, is made through it; the finish is not.
	id := testutil.WaitContent(t, filepath.Join(f.dir, "slow.id"), fleetLimit)
	r.setDelay(1200 * time.Millisecond)
	// Until the payload is done, or the run stopped it.
	for deadline := time.Now().Add(fleetLimit); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(f.dir, "slow.done")); err == nil {
			break
		}
		if _, err := os.Stat(filepath.Join(f.dir, "slow.rc")); err == nil || time.Now().After(deadline) {
			break
		}
	}
	r.setDelay(0)
	if rc := testutil.WaitContent(t, filepath.Join(f.dir, "slow.rc"), fleetLimit); rc != "0" {
		t.Errorf("ledger run through a slow relay = %s; want 0 (its lease kept)", rc)
	}
	h.Wait()
	if strings.Contains(said.String(), "stopping its command") {
		t.Errorf("ledger run gave up its lease though its database answered: %s", said.Bytes())
	}
	show := f.host("slow", "exec ledger show "+id+" --field status")
	show.Env = append(show.Env, "TETHER_LEDGER="+slow)
	if out, err := show.Output(); err != nil || strings.TrimSpace(string(out)) != "completed" {
		t.Errorf("ledger show %s --field status = %q, %v; want completed", id, out, err)
	}
}
