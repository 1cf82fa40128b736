package ledgertest

import (
	"errors"
	"slices"
	"testing"

	"github.com/tether-sh/tether/lib/ledger"
)

// testPruneStream: Prune passes what it drops job by job (in name order),
// oldest first; a dry run passes and counts the same and deletes nothing;
// a failing fn is not called again while the prune goes on, and its error
// comes back with the count.
func testPruneStream(t *testing.T, h Harness) {
	s := h.open(t, nil)
	finish := func(job string) string {
		r := MustClaim(t, s, job, ledger.ClaimOptions{})
		Must(t)(s.Finish(r.ID, ledger.Failed, nil, "x"))
		return r.ID
	}
	b1, a1, b2, a2, a3 := finish("b"), finish("a"), finish("b"), finish("a"), finish("a")
	all := []string{b1, a1, b2, a2, a3}
	stored := func() []string {
		t.Helper()
		var got []string
		if err := s.Each(ledger.Filter{}, func(r ledger.Record) error {
			got = append(got, r.ID)
			return nil
		}); err != nil {
			t.Fatalf("Each() = %v", err)
		}
		return got
	}

	o := ledger.PruneOptions{Keep: 1, DryRun: true}
	var passed []string
	n, err := s.Prune(o, func(r ledger.Record) error {
		passed = append(passed, r.ID)
		return nil
	})
	if want := []string{a1, a2, b1}; err != nil || n != 3 || !slices.Equal(passed, want) {
		t.Fatalf("Prune(%+v) = %d, %v, passing %v; want 3, nil, passing %v", o, n, err, passed, want)
	}
	if got := stored(); !slices.Equal(got, all) {
		t.Fatalf("after a dry run, stored = %v; want all of %v", got, all)
	}

	stop := errors.New("enough")
	calls := 0
	o.DryRun = false
	n, err = s.Prune(o, func(ledger.Record) error {
		calls++
		return stop
	})
	if n != 3 || !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("Prune(%+v) with a failing fn = %d, %v after %d calls; want 3, %v after 1", o, n, err, calls, stop)
	}
	if got, want := stored(), []string{b2, a3}; !slices.Equal(got, want) {
		t.Fatalf("after Prune(%+v), stored = %v; want %v", o, got, want)
	}
	if n, err := s.Prune(ledger.PruneOptions{}, nil); n != 2 || err != nil {
		t.Fatalf("Prune({}, nil) = %d, %v; want 2, nil", n, err)
	}
	if got := stored(); len(got) != 0 {
		t.Fatalf("after Prune({}), stored = %v; want none", got)
	}
}
