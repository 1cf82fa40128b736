package ledgertest

import (
	"errors"
	"slices"
	"testing"

	"github.com/tether-sh/tether/lib/ledger"
)

// testEach: Each walks the executions a filter selects, oldest first, one
// call of fn each, on the terminal and the live paths alike, and fn's first
// error ends the walk and comes back as it is.
func testEach(t *testing.T, h Harness) {
	s := h.open(t, nil)
	code := 0
	a := MustClaim(t, s, "j", ledger.ClaimOptions{})
	b := MustClaim(t, s, "j", ledger.ClaimOptions{})
	Must(t)(s.Start(b.ID, nil))
	Must(t)(s.Finish(b.ID, ledger.Completed, &code, ""))
	c := MustClaim(t, s, "j", ledger.ClaimOptions{})
	Must(t)(s.Finish(c.ID, ledger.Failed, nil, "no"))
	d := MustClaim(t, s, "k", ledger.ClaimOptions{})
	Must(t)(s.Start(d.ID, nil))
	e := MustClaim(t, s, "k", ledger.ClaimOptions{})

	ids := func(f ledger.Filter) []string {
		t.Helper()
		var got []string
		if err := s.Each(f, func(r ledger.Record) error {
			got = append(got, r.ID)
			return nil
		}); err != nil {
			t.Fatalf("Each(%+v) = %v", f, err)
		}
		return got
	}
	for _, tc := range []struct {
		f    ledger.Filter
		want []string
	}{
		{ledger.Filter{}, []string{a.ID, b.ID, c.ID, d.ID, e.ID}},
		{ledger.Filter{Job: "j"}, []string{a.ID, b.ID, c.ID}},
		{ledger.Filter{Status: ledger.Completed}, []string{b.ID}},
		{ledger.Filter{Job: "j", Status: ledger.Failed}, []string{c.ID}},
		{ledger.Filter{Status: ledger.Claimed}, []string{a.ID, e.ID}},
		{ledger.Filter{Job: "k", Status: ledger.Running}, []string{d.ID}},
		{ledger.Filter{Job: "none"}, nil},
		{ledger.Filter{Newest: 2}, []string{b.ID, c.ID, d.ID, e.ID}},
		{ledger.Filter{Job: "j", Newest: 1}, []string{c.ID}},
		{ledger.Filter{Job: "j", Newest: 2}, []string{b.ID, c.ID}},
		{ledger.Filter{Job: "j", Newest: 9}, []string{a.ID, b.ID, c.ID}},
		{ledger.Filter{Job: "k", Newest: 1}, []string{e.ID}},
		{ledger.Filter{Job: "none", Newest: 3}, nil},
	} {
		if got := ids(tc.f); !slices.Equal(got, tc.want) {
			t.Errorf("Each(%+v) = %v; want %v", tc.f, got, tc.want)
		}
	}

	stop := errors.New("enough")
	for _, f := range []ledger.Filter{{}, {Status: ledger.Claimed}} {
		calls := 0
		err := s.Each(f, func(ledger.Record) error {
			calls++
			return stop
		})
		if err != stop || calls != 1 {
			t.Errorf("Each(%+v) with fn failing = %v after %d calls; want fn's error after 1", f, err, calls)
		}
	}
	if err := s.Each(ledger.Filter{Job: "bad/name"}, func(ledger.Record) error { return nil }); !errors.Is(err, ledger.ErrBadInput) {
		t.Errorf("Each(job bad/name) = %v; want ledger.ErrBadInput", err)
	}
	for _, f := range []ledger.Filter{{Newest: -1}, {Job: "j", Newest: 2, Status: ledger.Failed}} {
		if err := s.Each(f, func(ledger.Record) error { return nil }); !errors.Is(err, ledger.ErrBadInput) {
			t.Errorf("Each(%+v) = %v; want ledger.ErrBadInput", f, err)
		}
	}
}
