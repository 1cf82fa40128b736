//go:build linux

package filestore

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
)

// TestJobsFor checks the order in which the jobs are searched for a
// finished id: those it hints first, then the rest, each sorted.
func TestJobsFor(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	jobs := []string{"a", "b", "c", "d", "e"}
	for _, j := range jobs {
		mustClaim(t, s, j, ledger.ClaimOptions{})
	}
	at := time.Now()
	for _, c := range []struct {
		name, id string
		want     []string
	}{
		{"an id of c", ledger.NewID(at, "c"), []string{"c", "a", "b", "d", "e"}},
		{"an id of e", ledger.NewID(at, "e"), []string{"e", "a", "b", "c", "d"}},
		{"an id of a job not stored", ledger.NewID(at, "none"), jobs},
		{"a chosen id", "my-own-id", jobs},
		{"an id of NewID's length without its dash", "0123456789abcxdefg" + ledger.NewID(at, "c")[18:], jobs},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := s.jobsFor(c.id)
			if err != nil || !slices.Equal(got, c.want) {
				t.Fatalf("jobsFor(%q) = %q, %v; want %q", c.id, got, err, c.want)
			}
		})
	}
}

// TestGetOtherJobsHint checks that an execution whose id hints another
// job (a caller's choice, or an id made before the hints) is found where
// it is, and that an absent id of the same hint is not found.
func TestGetOtherJobsHint(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	for _, j := range []string{"a", "c", "e"} {
		finishedIn(t, s, j, 2)
	}
	at := time.Now()
	id := ledger.NewID(at, "c")
	r := mustClaim(t, s, "e", ledger.ClaimOptions{ID: id})
	done := must(t)(s.Finish(r.ID, ledger.Failed, nil, "x"))
	got, err := s.Get(id)
	if err != nil || got.Job != "e" || got.Status != ledger.Failed || !got.FinishedAt.Equal(done.FinishedAt) {
		t.Fatalf("Get(%s) = %s %s, %v; want e's failed execution", id, got.Job, got.Status, err)
	}
	absent := ledger.NewID(at.Add(time.Second), "c")
	if _, err := s.Get(absent); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("Get(%s) = %v; want ErrNotFound", absent, err)
	}
}
