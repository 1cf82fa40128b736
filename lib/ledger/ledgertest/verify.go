package ledgertest

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
)

// testVerify: a store written only through the ledger is sound, for a
// job or the whole store, and --repair of a sound store changes nothing.
func testVerify(t *testing.T, h Harness) {
	s := h.open(t, nil)
	job := "verify-" + ledger.NewID(time.Now(), "v")
	code := 0
	for i := range 3 {
		r := MustClaim(t, s, job, ledger.ClaimOptions{Instant: time.Date(2026, 1, 1+i, 0, 0, 0, 0, time.UTC)})
		Must(t)(s.Start(r.ID, nil))
		Must(t)(s.Finish(r.ID, ledger.Completed, &code, ""))
	}
	MustClaim(t, s, job, ledger.ClaimOptions{})
	if _, err := s.Prune(ledger.PruneOptions{Job: job, Keep: 1}, nil); err != nil {
		t.Fatalf("Prune = %v", err)
	}
	before, err := ledger.List(s, ledger.Filter{Job: job})
	if err != nil {
		t.Fatalf("List = %v", err)
	}
	for _, o := range []ledger.VerifyOptions{{Job: job}, {Job: job, Repair: true}} {
		var got []ledger.Problem
		rep, err := s.Verify(o, func(p ledger.Problem) error {
			got = append(got, p)
			return nil
		})
		if err != nil || len(got) > 0 || rep.Problems != 0 {
			t.Fatalf("Verify(%+v) = %+v, %v, problems %+v; want none", o, rep, err, got)
		}
		if rep.Checks == "" {
			t.Errorf("Verify(%+v).Checks = %q; want what was checked", o, rep.Checks)
		}
	}
	after, err := ledger.List(s, ledger.Filter{Job: job})
	if err != nil || len(after) != len(before) {
		t.Fatalf("List after Verify = %d records, %v; want %d", len(after), err, len(before))
	}
	for i := range before {
		if !reflect.DeepEqual(before[i], after[i]) {
			t.Errorf("record %d after Verify = %+v; want %+v", i, after[i], before[i])
		}
	}
	if _, err := s.Verify(ledger.VerifyOptions{Job: "a/b"}, func(ledger.Problem) error { return nil }); !errors.Is(err, ledger.ErrBadInput) {
		t.Errorf("Verify(bad job) = %v; want ledger.ErrBadInput", err)
	}
}
