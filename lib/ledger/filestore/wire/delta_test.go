package wire

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/proc"
)

// version is a named version of sampleVersions' claim.
type version struct {
	name string
	r    ledger.Record
}

// sampleVersions are a claim and versions of it, in every state, as a
// store that appends deltas keeps them (the claim first).
func sampleVersions() (claim ledger.Record, versions []version) {
	at := time.Date(2026, 12, 4, 15, 22, 37, 609547411, time.UTC)
	owner := ledger.Owner{Host: "vm", BootID: "cee98ba1-4154-4711-a7c7-6f2b0f1b19c5", PIDNS: 4026531836, PID: 1153, Start: 4100}
	claim = ledger.Record{ID: "0dnc1ux353gcz-prda3c", Job: "j", Source: "cron", Status: ledger.Claimed, Owner: owner, ClaimedAt: at, Instant: at.Truncate(time.Minute)}
	code := 3
	started := claim
	started.Status, started.StartedAt = ledger.Running, at.Add(time.Millisecond)
	child := started
	child.Child = proc.ID{PID: 77, Start: 9}
	adopted := claim
	adopted.Fenced, adopted.FencedAt = true, at.Add(time.Second)
	adopted.Status, adopted.StartedAt = ledger.Running, at.Add(2*time.Second)
	adopted.Owner = ledger.Owner{Host: "vm", BootID: owner.BootID, PID: 99, Start: 5}
	finished := child
	finished.Status, finished.FinishedAt, finished.ExitCode = ledger.Completed, at.Add(time.Second), &code
	failed := claim
	failed.Status, failed.FinishedAt, failed.Error = ledger.Failed, at.Add(time.Second), "exit status 1"
	escaped := failed
	escaped.Error = "quote \" and \u00e9"
	beat := started
	beat.BeatAt, beat.Note = at.Add(time.Minute), "50% done"
	beatLine := beat
	beatLine.Note = "50% done\n"
	abandoned := claim
	abandoned.Status, abandoned.FinishedAt = ledger.Abandoned, at.Add(time.Hour)
	return claim, []version{{"same", claim}, {"start", started}, {"child", child}, {"adopt", adopted},
		{"finish", finished}, {"failed", failed}, {"escaped", escaped}, {"beat", beat}, {"beat line", beatLine},
		{"abandoned", abandoned}}
}

// TestDelta: a version written as a delta against its claim reads back
// whole, names only what changed, and is small.
func TestDelta(t *testing.T) {
	claim, versions := sampleVersions()
	want := map[string]struct {
		keys string
		max  int
	}{
		"same":      {`{}`, 2},
		"start":     {`{"status":"running","started_at":"2026-12-04T15:22:37.610547411Z"}`, 80},
		"child":     {"", 120},
		"adopt":     {"", 300},
		"finish":    {"", 160},
		"failed":    {`{"status":"failed","finished_at":"2026-12-04T15:22:38.609547411Z","error":"exit status 1"}`, 120},
		"escaped":   {`{"status":"failed","finished_at":"2026-12-04T15:22:38.609547411Z","error":"quote \" and é"}`, 120},
		"beat":      {"", 200},
		"beat line": {"", 200},
		"abandoned": {"", 120},
	}
	for _, v := range versions {
		tc, ok := want[v.name]
		if !ok {
			t.Fatalf("no expectation for version %q", v.name)
		}
		d := EncodeDelta(v.r, claim)
		if tc.keys != "" && string(d) != tc.keys {
			t.Errorf("%s: EncodeDelta = %s; want %s", v.name, d, tc.keys)
		}
		if len(d) > tc.max {
			t.Errorf("%s: EncodeDelta = %d bytes (%s); want at most %d", v.name, len(d), d, tc.max)
		}
		got, err := ApplyDelta(claim, d)
		if err != nil || !reflect.DeepEqual(got, v.r) {
			t.Errorf("%s: ApplyDelta(claim, %s) = %+v, %v; want %+v", v.name, d, got, err, v.r)
		}
	}
}

func TestApplyDeltaRefuses(t *testing.T) {
	base := ledger.Record{ID: "0dnc1ux353gcz-prda3c", Job: "j", Status: ledger.Claimed, Owner: ledger.Owner{Host: "h", PID: 1, Start: 2}, ClaimedAt: time.Unix(1, 0).UTC()}
	for _, d := range []string{
		``, `[]`, `{"nope":1}`, `{"id":"0dnc1ux353gcz-aaaaaa"}`, `{"status":7}`,
		`{"status":"completed"}`, // no finished_at: illegal
		`{"claimed_at":"yesterday"}`, `{"status":"running"`,
	} {
		if _, err := ApplyDelta(base, []byte(d)); !errors.Is(err, ledger.ErrCorrupt) {
			t.Errorf("ApplyDelta(base, %q) = %v; want ledger.ErrCorrupt", d, err)
		}
	}
}
