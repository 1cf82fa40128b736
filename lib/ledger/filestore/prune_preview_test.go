//go:build linux

package filestore

import (
	"slices"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
)

// TestPruneDryRun: a dry run returns exactly what Prune then deletes, and
// deletes nothing itself.
func TestPruneDryRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		o    ledger.PruneOptions
		want int
	}{
		{"everything terminal", ledger.PruneOptions{}, 6},
		{"keep 3 of each job", ledger.PruneOptions{Keep: 3}, 2},
		{"older than 150 minutes", ledger.PruneOptions{OlderThan: 150 * time.Minute}, 4},
		{"keep 1, older than 1 hour", ledger.PruneOptions{Keep: 1, OlderThan: time.Hour}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			now := time.Now()
			s.now = func() time.Time { return now }
			for i := 0; i < 5; i++ {
				r := mustClaim(t, s, "j", ledger.ClaimOptions{})
				must(t)(s.Finish(r.ID, ledger.Failed, nil, ""))
				now = now.Add(time.Hour)
			}
			mustClaim(t, s, "j", ledger.ClaimOptions{})
			k := mustClaim(t, s, "k", ledger.ClaimOptions{})
			must(t)(s.Finish(k.ID, ledger.Failed, nil, ""))
			now = now.Add(time.Hour)

			ids := func(recs []ledger.Record) []string {
				var out []string
				for _, r := range recs {
					out = append(out, r.ID)
				}
				return out
			}
			before, err := ledger.List(s, ledger.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			o := tt.o
			o.DryRun = true
			preview, err := ledger.Pruned(s, o)
			if err != nil || len(preview) != tt.want {
				t.Fatalf("Prune(%+v) = %v, %v; want %d records", o, ids(preview), err, tt.want)
			}
			after, err := ledger.List(s, ledger.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids(after), ids(before)) {
				t.Fatalf("List after a dry run = %v; want %v (nothing deleted)", ids(after), ids(before))
			}
			got, err := ledger.Pruned(s, tt.o)
			if err != nil || !slices.Equal(ids(got), ids(preview)) {
				t.Fatalf("Prune(%+v) = %v, %v; want the dry run's %v", tt.o, ids(got), err, ids(preview))
			}
		})
	}
}
