package pgstore_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/ledgertest"
	"github.com/tether-sh/tether/lib/ledger/pgstore"
)

// TestEachPages: Each fetches its rows a page per statement and walks on
// across the pages in claim order, whether the last page is part full
// (5 rows in pages of 2) or empty (4), and fn's error ends the walk in the
// middle of a page.
func TestEachPages(t *testing.T) {
	url := newDB(t)
	s := open(t, url, pgstore.Options{})
	pgstore.SetPage(s, 2)
	var ids []string
	for range 5 {
		ids = append(ids, ledgertest.MustClaim(t, s, "paged", ledger.ClaimOptions{}).ID)
	}
	if _, err := s.Finish(ids[4], ledger.Failed, nil, ""); err != nil {
		t.Fatal(err)
	}
	walk := func(f ledger.Filter) []string {
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
	if got := walk(ledger.Filter{Job: "paged"}); !slices.Equal(got, ids) {
		t.Errorf("Each(paged) in pages of 2 = %v; want %v", got, ids)
	}
	if got := walk(ledger.Filter{Status: ledger.Claimed}); !slices.Equal(got, ids[:4]) {
		t.Errorf("Each(claimed) in pages of 2 = %v; want %v", got, ids[:4])
	}
	stop := errors.New("enough")
	calls := 0
	err := s.Each(ledger.Filter{}, func(ledger.Record) error {
		calls++
		if calls == 3 {
			return stop
		}
		return nil
	})
	if err != stop || calls != 3 {
		t.Errorf("Each with fn failing at the third = %v after %d calls; want fn's error after 3", err, calls)
	}
}

// BenchmarkEach walks a store of 100,000 executions fetched at the page
// size Each fetches by (eachPage) and at larger ones, up to one fetch.
func BenchmarkEach(b *testing.B) {
	url := newDB(b)
	s := open(b, url, pgstore.Options{})
	fillRows(b, s, url, 100_000)
	for _, page := range []int{pgstore.EachPage, 10 * pgstore.EachPage, 1 << 30} {
		b.Run(fmt.Sprintf("page=%d", page), func(b *testing.B) {
			pgstore.SetPage(s, page)
			for b.Loop() {
				n := 0
				if err := s.Each(ledger.Filter{}, func(ledger.Record) error { n++; return nil }); err != nil || n != 100_001 {
					b.Fatalf("Each = %d records, %v; want 100001", n, err)
				}
			}
		})
	}
}
