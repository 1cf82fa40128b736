package ledgercmd

import (
	"strings"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
)

// TestViewOf: a job's state, its next slot and its lateness, by its
// newest record's schedule, at a few instants around a daily 02:00 UTC
// slot (period 24h: the default grace is an hour).
func TestViewOf(t *testing.T) {
	day := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	code, one := 0, 1
	run := func(slot time.Time, st ledger.Status, exit *int) ledger.Record {
		r := ledger.Record{ID: "r", Job: "j", Status: st, Instant: slot, ClaimedAt: slot.Add(time.Second),
			StartedAt: slot.Add(time.Second), ExitCode: exit, Schedule: "CRON_TZ=UTC 0 2 * * *"}
		if st.Terminal() {
			r.FinishedAt = slot.Add(time.Minute)
		}
		return r
	}
	done := run(day, ledger.Completed, &code)
	failed := run(day, ledger.Failed, &one)
	sum := func(r ledger.Record) ledger.Summary {
		s := ledger.Summary{Job: "j", Latest: r}
		if r.Status.Terminal() {
			s.LastFinished = r
		} else {
			s.Live = 1
		}
		return s
	}
	next := day.Add(24 * time.Hour)
	tests := []struct {
		name  string
		s     ledger.Summary
		now   time.Time
		grace time.Duration
		state string
		late  time.Duration
		next  time.Time
	}{
		{"never", ledger.Summary{Job: "j"}, day, 0, stateNever, 0, time.Time{}},
		{"done, before the next slot", sum(done), next.Add(-time.Hour), 0, stateOK, 0, next},
		{"within the grace", sum(done), next.Add(59 * time.Minute), 0, stateOK, 0, next},
		{"past the grace", sum(done), next.Add(61 * time.Minute), 0, stateLate, 61 * time.Minute, next},
		{"past a grace given", sum(done), next.Add(11 * time.Minute), 10 * time.Minute, stateLate, 11 * time.Minute, next},
		{"failed, not late", sum(failed), next.Add(-time.Hour), 0, stateFailing, 0, next},
		{"failed and late", sum(failed), next.Add(2 * time.Hour), 0, stateLate, 2 * time.Hour, next},
		{"running past its next slot", sum(run(day, ledger.Running, nil)), next.Add(2 * time.Hour), 0, stateRunning, 0, next},
		{"no schedule", sum(func() ledger.Record { r := done; r.Schedule = ""; return r }()), next.Add(48 * time.Hour), 0, stateOK, 0, time.Time{}},
		{"a schedule that does not read", sum(func() ledger.Record { r := done; r.Schedule = "CRON_TZ=Nowhere/Atlantis 0 2 * * *"; return r }()), next.Add(48 * time.Hour), 0, stateOK, 0, time.Time{}},
		{"every, from the start", sum(func() ledger.Record { r := done; r.Instant, r.Schedule = time.Time{}, "@every 1h0m0s"; return r }()), day.Add(time.Hour + 7*time.Minute), 0, stateLate, 6*time.Minute + 59*time.Second, day.Add(time.Hour + time.Second)},
	}
	for _, tt := range tests {
		v := viewOf(tt.s, tt.now, tt.grace)
		if v.state != tt.state || v.late != tt.late || !v.next.Equal(tt.next) {
			t.Errorf("%s: viewOf = state %q, late %v, next %v; want %q, %v, %v", tt.name, v.state, v.late, v.next, tt.state, tt.late, tt.next)
		}
	}
}

// TestDefaultGrace: a tenth of the period, a minute to an hour.
func TestDefaultGrace(t *testing.T) {
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		period, want time.Duration
	}{
		{time.Minute, time.Minute},
		{5 * time.Minute, time.Minute},
		{time.Hour, 6 * time.Minute},
		{24 * time.Hour, time.Hour},
		{7 * 24 * time.Hour, time.Hour},
	} {
		if got := defaultGrace(at, at.Add(tt.period)); got != tt.want {
			t.Errorf("defaultGrace(period %v) = %v; want %v", tt.period, got, tt.want)
		}
	}
}

// TestJudgeCheckSchedule: without --max-age, check judges JOB by its
// schedule: a missed slot past its grace is a WARNING, two a CRITICAL,
// no schedule UNKNOWN; --max-age given wins.
func TestJudgeCheckSchedule(t *testing.T) {
	day := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	code := 0
	r := ledger.Record{ID: "r", Job: "j", Status: ledger.Completed, Instant: day, ClaimedAt: day, StartedAt: day,
		FinishedAt: day.Add(time.Minute), ExitCode: &code, Schedule: "CRON_TZ=UTC 0 2 * * *"}
	s := ledger.Summary{Job: "j", Latest: r, LastFinished: r, LastSuccess: r}
	bare := r
	bare.Schedule = ""
	tests := []struct {
		name string
		s    ledger.Summary
		now  time.Time
		o    checkOptions
		want checkState
		text string
		perf string
	}{
		{"before the slot", s, day.Add(23 * time.Hour), checkOptions{}, checkOK, "j next due 2026-12-02T02:00:00Z (CRON_TZ=UTC 0 2 * * *)", "late=0s;;;0"},
		{"one slot missed", s, day.Add(26 * time.Hour), checkOptions{}, checkWarning, "j is late: no run for 2026-12-02T02:00:00Z, due 2h0m0s ago", "late=7200s;;;0"},
		{"two slots missed", s, day.Add(50 * time.Hour), checkOptions{}, checkCritical, "nor 2026-12-03T02:00:00Z", "late=93600s;;;0"},
		{"a grace given", s, day.Add(24*time.Hour + 10*time.Minute), checkOptions{grace: 5 * time.Minute}, checkWarning, "grace 5m0s", "late=600s;;;0"},
		{"no schedule", ledger.Summary{Job: "j", Latest: bare, LastFinished: bare, LastSuccess: bare}, day.Add(time.Hour), checkOptions{}, checkUnknown, "schedule is unknown", ""},
		{"--max-age wins", s, day.Add(50 * time.Hour), checkOptions{maxAge: 72 * time.Hour}, checkOK, "j last succeeded", "late=93600s;;;0"},
	}
	for _, tt := range tests {
		got, text, perf := judgeCheck(tt.s, nil, tt.now, tt.o)
		if got != tt.want || !strings.Contains(text, tt.text) || !strings.Contains(perf, tt.perf) {
			t.Errorf("%s: judgeCheck = %s, %q | %q; want %s, containing %q, perfdata %q", tt.name, got, text, perf, tt.want, tt.text, tt.perf)
		}
	}
}
