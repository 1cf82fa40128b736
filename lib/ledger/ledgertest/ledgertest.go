// Package ledgertest is the conformance suite of the ledger's store seam
// (ledger.Ledger): the contract every implementation must keep, written
// once and run against each.
//
// # Synopsis
//
//	func TestConformance(t *testing.T) {
//		ledgertest.RunConformance(t, ledgertest.Harness{
//			Open: func(t *testing.T, now func() time.Time) ledger.Ledger { ... },
//		})
//	}
//
// The owners it records are real processes of this host (the test
// process, one that exited, one of another boot), so an implementation
// is tested judging them as the file store does.
package ledgertest

import (
	"os/exec"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/proc"
)

// Harness is how the suite reaches one implementation.
type Harness struct {
	// Open returns a new, empty store whose clock is now, or the real
	// clock if now is nil. The suite closes it.
	Open func(t *testing.T, now func() time.Time) ledger.Ledger
	// Reopen, if set, returns another handle on st's store, as another
	// process would hold; without it the suite shares st. It is called
	// from goroutines: it reports a failure with t.Error and returns nil.
	Reopen func(t *testing.T, st ledger.Ledger) ledger.Ledger
	// Raw, if set, returns execution id as stored, so that a refusal is
	// proven to leave it byte for byte unchanged; without it the records
	// Get returns before and after are compared.
	Raw func(t *testing.T, st ledger.Ledger, id string) []byte
	// OpenLeased, if set, returns a new, empty store (as Open, on the
	// real clock) whose owners hold leases of the given length; nil: the
	// store keeps no leases (KeepLease has nothing to keep).
	OpenLeased func(t *testing.T, lease time.Duration) ledger.Ledger
	// Shared: the store is shared by hosts (a database): it keeps late
	// results, recovers a host declared dead, and has no folder on this
	// host (no handoff folder, no boot notes). Otherwise it is one host's
	// (the file store): no late results, RecoverHost is ErrOneHost, and a
	// folder of its own for handoffs and boot notes.
	Shared bool
}

// RunConformance runs every case of the contract against h, each as a
// parallel subtest on a store of its own.
func RunConformance(t *testing.T, h Harness) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, h Harness)
	}{
		{"Transitions", testTransitions},
		{"RefusalMessages", testRefusalMessages},
		{"ClaimInstant", testClaimInstant},
		{"ClaimExclusive", testClaimExclusive},
		{"ClaimStarted", testClaimStarted},
		{"ClaimStopped", testClaimStopped},
		{"Recover", testRecover},
		{"Latest", testLatest},
		{"Each", testEach},
		{"Prune", testPrune},
		{"RaceGoroutines", testRaceGoroutines},
		{"Beat", testBeat},
		{"BeatIfLatest", testBeatIfLatest},
		{"BeatRace", testBeatRace},
		{"Summaries", testSummaries},
		{"Output", testOutput},
		{"ClaimEvery", testClaimEvery},
		{"ClaimEveryDrift", testClaimEveryDrift},
		{"ClaimSchedule", testClaimSchedule},
		{"ClaimOnce", testClaimOnce},
		{"PruneJob", testPruneJob},
		{"PruneStream", testPruneStream},
		{"KeepLease", testKeepLease},
		{"FinishRetrying", testFinishRetrying},
		{"Late", testLate},
		{"RecoverHost", testRecoverHost},
		{"HandoffDir", testHandoffDir},
		{"BootNote", testBootNote},
		{"Verify", testVerify},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, h)
		})
	}
}

func (h Harness) open(t *testing.T, now func() time.Time) ledger.Ledger {
	t.Helper()
	s := h.Open(t, now)
	t.Cleanup(func() { s.Close() })
	return s
}

// openLeased opens a store with leases of lease (OpenLeased), or a
// plain one for a store that keeps none.
func (h Harness) openLeased(t *testing.T, lease time.Duration) ledger.Ledger {
	t.Helper()
	if h.OpenLeased == nil {
		return h.open(t, nil)
	}
	s := h.OpenLeased(t, lease)
	t.Cleanup(func() { s.Close() })
	return s
}

func (h Harness) reopen(t *testing.T, s ledger.Ledger) ledger.Ledger {
	t.Helper()
	if h.Reopen == nil {
		return s
	}
	return h.Reopen(t, s)
}

// raw is the stored form of id, or its record's JSON without Raw.
func (h Harness) raw(t *testing.T, s ledger.Ledger, id string) []byte {
	t.Helper()
	if h.Raw != nil {
		return h.Raw(t, s, id)
	}
	r, err := s.Get(id)
	if err != nil {
		t.Fatalf("Get(%s) = %v", id, err)
	}
	b, err := r.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Self is the test process as an owner: alive for the whole test.
func Self(t testing.TB) ledger.Owner {
	t.Helper()
	o, err := ledger.LocalOwner(proc.Self())
	if err != nil {
		t.Fatalf("LocalOwner(self) = %v", err)
	}
	return o
}

// DeadOwner is an owner on this host that died with another boot.
func DeadOwner(t testing.TB) ledger.Owner {
	o := Self(t)
	o.BootID = "00000000-dead-dead-dead-000000000000"
	return o
}

// ExitedOwner is a real process of this boot that has exited.
func ExitedOwner(t testing.TB) ledger.Owner {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", "exit 0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	o, err := ledger.LocalOwner(proc.ID{PID: cmd.Process.Pid})
	cmd.Wait()
	if err != nil {
		// It exited before we looked: any PID of this boot with an
		// impossible start time is just as dead.
		o = Self(t)
		o.Start++
	}
	return o
}

// MustClaim claims job (owned by Self unless o names an owner) or fails t.
func MustClaim(t testing.TB, s ledger.Ledger, job string, o ledger.ClaimOptions) ledger.Record {
	t.Helper()
	if o.Owner.PID == 0 {
		o.Owner = Self(t)
	}
	r, err := s.Claim(job, o)
	if err != nil {
		t.Fatalf("Claim(%q) = %v", job, err)
	}
	return r
}

// Must(t)(s.Op(...)) fails the test if the operation fails.
func Must(t testing.TB) func(ledger.Record, error) ledger.Record {
	return func(r ledger.Record, err error) ledger.Record {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
}

// MakeState returns the id of an execution of job "job" in the named
// state: claimed, fenced, running, adopted, completed, failed,
// failed-unstarted, unknown or abandoned.
func MakeState(t *testing.T, s ledger.Ledger, state string) string {
	t.Helper()
	code := 3
	switch state {
	case "claimed":
		return MustClaim(t, s, "job", ledger.ClaimOptions{}).ID
	case "fenced":
		id := MustClaim(t, s, "job", ledger.ClaimOptions{}).ID
		Must(t)(s.Fence(id))
		return id
	case "running":
		id := MustClaim(t, s, "job", ledger.ClaimOptions{}).ID
		Must(t)(s.Start(id, nil))
		return id
	case "adopted":
		id := MakeState(t, s, "fenced")
		Must(t)(s.Adopt(id, Self(t)))
		return id
	case "completed", "failed":
		id := MakeState(t, s, "running")
		Must(t)(s.Finish(id, ledger.Status(state), &code, ""))
		return id
	case "failed-unstarted":
		id := MakeState(t, s, "claimed")
		Must(t)(s.Finish(id, ledger.Failed, nil, "dispatch failed"))
		return id
	case "unknown", "abandoned":
		id := MustClaim(t, s, "job", ledger.ClaimOptions{Owner: DeadOwner(t)}).ID
		if state == "unknown" {
			Must(t)(s.Start(id, nil))
		}
		got, err := s.Recover(time.Second)
		if err != nil || len(got) != 1 || got[0].Status != ledger.Status(state) {
			t.Fatalf("Recover = %v, %v; want one %s", got, err, state)
		}
		return id
	}
	t.Fatalf("no state %q", state)
	return ""
}
