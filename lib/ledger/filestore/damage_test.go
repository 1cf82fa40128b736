//go:build linux

package filestore

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/filestore/joblog"
	"github.com/tether-sh/tether/lib/ledger/ledgertest"
)

// TestDamageSeen: a job's log cut short (at a frame boundary, or in its
// last frame), removed, or replaced by another job's is reported as
// ErrCorrupt by every reader and writer of the job, never read as a log
// with fewer executions; an instant the lost part held is not claimed.
func TestDamageSeen(t *testing.T) {
	t.Parallel()
	code := 0
	instant := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		damage func(s *Store, log string, cut int64)
	}{
		{"cut at a boundary", func(s *Store, log string, cut int64) { os.Truncate(log, cut) }},
		{"cut in its last frame", func(s *Store, log string, cut int64) {
			st, _ := os.Stat(log)
			os.Truncate(log, st.Size()-3)
		}},
		{"removed", func(s *Store, log string, cut int64) { os.Remove(log) }},
		{"another job's", func(s *Store, log string, cut int64) {
			b, _ := os.ReadFile(s.path(jobsDir, "other", joblog.Name))
			os.WriteFile(log, b, 0o600)
		}},
	} {
		s := newStore(t)
		run := func(job string, o ledger.ClaimOptions) ledger.Record {
			r := mustClaim(t, s, job, o)
			must(t)(s.Start(r.ID, nil))
			return must(t)(s.Finish(r.ID, ledger.Completed, &code, ""))
		}
		run("other", ledger.ClaimOptions{})
		first := run("j", ledger.ClaimOptions{})
		log := s.path(jobsDir, "j", joblog.Name)
		st, err := os.Stat(log)
		if err != nil {
			t.Fatal(err)
		}
		run("j", ledger.ClaimOptions{Instant: instant})
		tc.damage(s, log, st.Size())
		if _, err := s.Get(first.ID); !errors.Is(err, ledger.ErrCorrupt) {
			t.Errorf("%s: Get = %v; want ErrCorrupt", tc.name, err)
		}
		if _, err := s.Latest("j"); !errors.Is(err, ledger.ErrCorrupt) {
			t.Errorf("%s: Latest = %v; want ErrCorrupt", tc.name, err)
		}
		if _, err := ledger.List(s, ledger.Filter{}); !errors.Is(err, ledger.ErrCorrupt) {
			t.Errorf("%s: List = %v; want ErrCorrupt", tc.name, err)
		}
		if _, err := s.Summaries("j"); !errors.Is(err, ledger.ErrCorrupt) {
			t.Errorf("%s: Summaries = %v; want ErrCorrupt", tc.name, err)
		}
		o := ledger.ClaimOptions{Owner: ledgertest.Self(t), Instant: instant}
		if r, err := s.Claim("j", o); !errors.Is(err, ledger.ErrCorrupt) {
			t.Errorf("%s: Claim of the lost instant = %s, %v; want ErrCorrupt", tc.name, r.ID, err)
		}
	}
}
