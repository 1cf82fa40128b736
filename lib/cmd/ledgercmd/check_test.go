package ledgercmd

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
)

func TestJudgeCheck(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	code := 0
	one := 1
	rec := func(id string, st ledger.Status, claimed, finished time.Duration, exit *int) ledger.Record {
		r := ledger.Record{ID: id, Job: "j", Status: st, ClaimedAt: now.Add(-claimed), StartedAt: now.Add(-claimed), ExitCode: exit}
		if st.Terminal() {
			r.FinishedAt = now.Add(-finished)
		}
		return r
	}
	ok := rec("ok", ledger.Completed, 2*time.Hour, time.Hour, &code)
	failed := rec("bad", ledger.Failed, 20*time.Minute, 10*time.Minute, &one)
	future := rec("ahead", ledger.Completed, -2*time.Hour+time.Second, -2*time.Hour, &code)
	tests := []struct {
		name        string
		s           ledger.Summary
		maxDuration time.Duration
		want        checkState
		text        string
	}{
		{"never ran", ledger.Summary{Job: "j"}, 0, checkCritical, "j never ran"},
		{"pruned away", ledger.Summary{Job: "j", Runs: map[ledger.Status]uint64{ledger.Failed: 4}}, 0, checkCritical, "its 4 runs were pruned"},
		{"success pruned", ledger.Summary{Job: "j", Runs: map[ledger.Status]uint64{ledger.Completed: 3, ledger.Failed: 1}}, 0, checkCritical, "its 3 successful runs were pruned"},
		{"pruned, summary kept", ledger.Summary{Job: "j", LastFinished: ok, LastSuccess: ok, Runs: map[ledger.Status]uint64{ledger.Completed: 1}}, 0, checkOK, "j last succeeded 1h0m0s ago"},
		{"success from the future", ledger.Summary{Job: "j", Latest: future, LastFinished: future, LastSuccess: future}, 0, checkWarning, "2h0m0s in the future: the clock was stepped back"},
		{"never succeeded", ledger.Summary{Job: "j", Latest: failed, LastFinished: failed}, 0, checkCritical, "j never succeeded"},
		{"recent success", ledger.Summary{Job: "j", Latest: ok, LastFinished: ok, LastSuccess: ok}, 0, checkOK, "j last succeeded 1h0m0s ago"},
		{"stale success", ledger.Summary{Job: "j", Latest: ok, LastFinished: ok, LastSuccess: ok}, 0, checkCritical, "longer than --max-age"},
		{"failed since", ledger.Summary{Job: "j", Latest: failed, LastFinished: failed, LastSuccess: ok}, 0, checkWarning, "latest finished run bad failed (exit 1)"},
		{"live within", ledger.Summary{Job: "j", Latest: rec("l", ledger.Running, 30*time.Minute, 0, nil), LastFinished: ok, LastSuccess: ok, Live: 1}, time.Hour, checkOK, "1 live (for 30m0s)"},
		{"live past", ledger.Summary{Job: "j", Latest: rec("l", ledger.Running, 90*time.Minute, 0, nil), LastFinished: ok, LastSuccess: ok, Live: 1}, time.Hour, checkWarning, "live for 1h30m0s, longer than --max-duration 1h0m0s"},
		{"live past twice", ledger.Summary{Job: "j", Latest: rec("l", ledger.Running, 3*time.Hour, 0, nil), LastFinished: ok, LastSuccess: ok, Live: 1}, time.Hour, checkCritical, "more than twice --max-duration"},
		{"live older than the latest", ledger.Summary{Job: "j", Latest: ok, LastFinished: ok, LastSuccess: ok, Live: 1}, time.Hour, checkWarning, "live for at least 2h0m0s"},
		{"live not judged", ledger.Summary{Job: "j", Latest: rec("l", ledger.Running, 5*time.Hour, 0, nil), LastFinished: ok, LastSuccess: ok, Live: 1}, 0, checkOK, "1 live"},
	}
	for _, tt := range tests {
		maxAge := 2 * time.Hour
		if tt.name == "stale success" {
			maxAge = 30 * time.Minute
		}
		got, text, perf := judgeCheck(tt.s, nil, now, checkOptions{maxAge: maxAge, maxDuration: tt.maxDuration})
		if got != tt.want || !strings.Contains(text, tt.text) {
			t.Errorf("%s: judgeCheck = %s, %q; want %s, containing %q", tt.name, got, text, tt.want, tt.text)
		}
		if !strings.Contains(perf, "running=") || strings.ContainsAny(perf, "|\n") {
			t.Errorf("%s: perfdata %q; want running= and no | or newline", tt.name, perf)
		}
	}
}

// TestJudgeCheckFailures: --failures N makes N finished runs failed in a
// row CRITICAL and fewer a WARNING; live runs between them do not break
// the row, a success does.
func TestJudgeCheckFailures(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	code, one := 0, 1
	at := now.Add(-time.Hour)
	rec := func(id string, st ledger.Status, exit *int) ledger.Record {
		r := ledger.Record{ID: id, Job: "j", Status: st, ClaimedAt: at, StartedAt: at, ExitCode: exit}
		if st.Terminal() {
			r.FinishedAt = at.Add(time.Minute)
		}
		return r
	}
	ok, bad, lost, live := rec("ok", ledger.Completed, &code), rec("bad", ledger.Failed, &one), rec("lost", ledger.Unknown, nil), rec("live", ledger.Running, nil)
	tests := []struct {
		name     string
		recent   []ledger.Record
		failures int
		want     checkState
		text     string
		perf     string
	}{
		{"no failure", []ledger.Record{bad, ok}, 3, checkOK, "last succeeded", "failures=0;1;3;0"},
		{"one of three", []ledger.Record{ok, bad}, 3, checkWarning, "(1 in a row, CRITICAL at --failures 3)", "failures=1;1;3;0"},
		{"three of three", []ledger.Record{ok, bad, lost, bad}, 3, checkCritical, "its last 3 finished runs failed (--failures 3)", "failures=3;1;3;0"},
		{"a live run between", []ledger.Record{bad, live, bad}, 2, checkCritical, "its last 2 finished runs failed", "failures=2;1;2;0"},
		{"fewer on record", []ledger.Record{bad}, 2, checkWarning, "1 in a row", "failures=1;1;2;0"},
		{"one is enough", []ledger.Record{ok, bad}, 1, checkCritical, "its last 1 finished runs failed", "failures=1;1;1;0"},
	}
	for _, tt := range tests {
		newest := tt.recent[len(tt.recent)-1]
		s := ledger.Summary{Job: "j", Latest: newest, LastSuccess: ok}
		for _, r := range tt.recent {
			if r.Status.Terminal() {
				s.LastFinished = r
			}
		}
		got, text, perf := judgeCheck(s, tt.recent, now, checkOptions{maxAge: 24 * time.Hour, failures: tt.failures})
		if got != tt.want || !strings.Contains(text, tt.text) || !strings.Contains(perf, tt.perf) {
			t.Errorf("%s: judgeCheck = %s, %q | %s; want %s, containing %q, perfdata %s", tt.name, got, text, perf, tt.want, tt.text, tt.perf)
		}
	}
}

func TestCheckUsage(t *testing.T) {
	tests := []struct {
		args []string
		want bool
	}{
		{[]string{"check", "j"}, true},
		{[]string{"--ledger", "check", "status"}, false},
		{[]string{"--ledger=/x", "--json", "check"}, true},
		{[]string{"--lock-timeout", "1s", "check"}, true},
		{[]string{"run", "j", "--", "check"}, false},
		{[]string{"--", "check"}, false},
		{nil, false},
		// check must be the first word: a mistyped command before it is
		// a usage error of its own, not the plugin's
		{[]string{"help", "check"}, false},
		{[]string{"foo", "check", "j"}, false},
		{[]string{"--owner", "5", "check"}, false},
	}
	for _, tt := range tests {
		if got := checkUsage(tt.args); got != tt.want {
			t.Errorf("checkUsage(%q) = %v; want %v", tt.args, got, tt.want)
		}
	}
}

// TestRunsCommand: run's and spawn's usage errors are a runner's (125),
// however the line went wrong before them; no other's is.
func TestRunsCommand(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want bool
	}{
		{[]string{"run", "j", "--dedline", "1", "--", "true"}, true},
		{[]string{"--ledger", "/x", "spawn", "j"}, true},
		{[]string{"--ledgr", "x", "run", "--bogus"}, true},
		{[]string{"--ledger", "run", "list"}, false},
		{[]string{"list", "run"}, false},
		{[]string{"--", "run"}, false},
		{[]string{"frobnicate"}, false},
	} {
		if got := RunsCommand(tt.args); got != tt.want {
			t.Errorf("RunsCommand(%q) = %v; want %v", tt.args, got, tt.want)
		}
	}
}

func TestWriteMetricsEscapes(t *testing.T) {
	var b bytes.Buffer
	writeMetrics(&b, []jobView{{sum: ledger.Summary{Job: "a\"b\\c\nd"}}})
	if want := `tether_live_runs{tether_job="a\"b\\c\nd"} 0` + "\n"; !strings.Contains(b.String(), want) {
		t.Errorf("writeMetrics = %s; want a line %q", b.String(), want)
	}
	if got := strings.Count(b.String(), "# TYPE "); got != len(metricFamilies) {
		t.Errorf("writeMetrics has %d TYPE lines; want %d", got, len(metricFamilies))
	}
}
