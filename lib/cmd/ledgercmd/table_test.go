package ledgercmd

import (
	"fmt"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
)

// tabwriterTable is list's table as text/tabwriter lays it out: what
// table must print, byte for byte.
func tabwriterTable(recs []ledger.Record) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	beats, attempts := false, false
	for _, r := range recs {
		beats = beats || !r.BeatAt.IsZero()
		attempts = attempts || r.Attempts > 0
	}
	// ATTEMPT's cells, but in a table with attempts.
	cells := func(row string) string {
		if attempts {
			return row
		}
		c := strings.Split(row, "\t")
		return strings.Join(append(c[:attemptCol:attemptCol], c[attemptCol+1:]...), "\t")
	}
	head := cells(tableHead)
	if beats {
		head += "\t" + beatHead
	}
	fmt.Fprintln(tw, head)
	for _, r := range recs {
		var one table
		one.add(r)
		row := cells(one.rows[0])
		if beats {
			beat := one.beats[0]
			if beat == "" {
				beat = noBeat
			}
			row += "\t" + beat
		}
		fmt.Fprintln(tw, row)
	}
	tw.Flush()
	return b.String()
}

func TestTableLayout(t *testing.T) {
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	code, long := 0, 137
	plain := ledger.Record{ID: "0dna60s54o0lq-opo45u", Job: "backup", Status: ledger.Completed,
		Owner: ledger.Owner{Host: "vm", PID: 42, Start: 7}, ClaimedAt: at, FinishedAt: at.Add(time.Second), ExitCode: &code}
	fenced := ledger.Record{ID: "0dna60s4f74qp-cea0lu", Job: "a-much-longer-job-name", Status: ledger.Claimed,
		Fenced: true, Owner: ledger.Owner{Host: "vm", PID: 31337, Start: 123456}, ClaimedAt: at, Instant: at}
	failed := plain
	failed.Status, failed.ExitCode, failed.Error = ledger.Failed, &long, "ünïcode ✓ and a tab\there"
	beaten := plain
	beaten.Status, beaten.ExitCode, beaten.BeatAt, beaten.Note = ledger.Running, nil, at, "step 3 of 5 ✓"
	quiet := beaten
	quiet.Note = ""
	retried := failed
	retried.Attempt, retried.Attempts = 2, 10
	for _, tc := range []struct {
		name string
		recs []ledger.Record
	}{
		{"empty", nil},
		{"one", []ledger.Record{plain}},
		{"widths", []ledger.Record{plain, fenced, failed}},
		{"beaten", []ledger.Record{plain, beaten, failed}},
		{"beaten last", []ledger.Record{fenced, plain, quiet}},
		{"attempts", []ledger.Record{plain, retried, fenced}},
		{"attempts beaten", []ledger.Record{retried, beaten}},
	} {
		var tab table
		for _, r := range tc.recs {
			tab.add(r)
		}
		var b strings.Builder
		tab.write(&b)
		if got, want := b.String(), tabwriterTable(tc.recs); got != want {
			t.Errorf("%s: table =\n%s; want (tabwriter's)\n%s", tc.name, got, want)
		}
	}
}
