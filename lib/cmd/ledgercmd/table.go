package ledgercmd

import (
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/ledger"
)

// tableHead and beatHead are the table's header; ATTEMPT only where some
// execution is an attempt of a retried run (k/N, ledger run --retry),
// BEAT and NOTE only where some execution was beaten: the table of
// executions that never were stays as it always was.
const (
	tableHead = "ID\tJOB\tSTATUS\tINSTANT\tOWNER\tCLAIMED\tFINISHED\tEXIT\tATTEMPT\tERROR"
	beatHead  = "BEAT\tNOTE"
)

// attemptCol is the index of the ATTEMPT column, left out of a table
// without attempts.
const attemptCol = 8

// noBeat is the BEAT and NOTE cells of an execution never beaten.
const noBeat = "-\t-"

// table is list's aligned table, laid out as text/tabwriter lays it out
// (columns two spaces wider than their widest cell; the last cell of a
// line unpadded), which TestTableLayout holds it to. It keeps each row as
// one tab-separated string and each column's width as it goes: a third of
// what tabwriter keeps per cell, for a table of every stored execution.
type table struct {
	rows   []string // the cells up to ERROR, ATTEMPT's included
	beats  []string // their BEAT and NOTE cells, "" for noBeat
	widths []int    // the widest cell of each column so far
	beaten bool     // some execution was beaten
	// attempted: some execution is an attempt (its ATTEMPT cell not "-")
	attempted bool
}

// add formats r as one row.
func (t *table) add(r ledger.Record) {
	st := string(r.Status)
	if r.Fenced && r.Status == ledger.Claimed {
		st = "claimed+fenced"
	}
	exit := "-"
	if r.ExitCode != nil {
		exit = strconv.Itoa(*r.ExitCode)
	}
	errMsg := cli.EscapeControl(r.Error)
	if errMsg == "" {
		errMsg = "-"
	}
	attempt := "-"
	if r.Attempts > 0 {
		attempt = strconv.Itoa(r.Attempt) + "/" + strconv.Itoa(r.Attempts)
		t.attempted = true
	}
	row := strings.Join([]string{r.ID, r.Job, st, tableTime(r.Instant), r.Owner.ID().String(),
		tableTime(r.ClaimedAt), tableTime(r.FinishedAt), exit, attempt, errMsg}, "\t")
	beat := ""
	if !r.BeatAt.IsZero() {
		note := cli.EscapeControl(r.Note)
		if note == "" {
			note = "-"
		}
		beat = tableTime(r.BeatAt) + "\t" + note
		t.beaten = true
	}
	t.measureHead()
	t.rows = append(t.rows, row)
	t.beats = append(t.beats, beat)
	if beat == "" {
		beat = noBeat
	}
	t.measure(row + "\t" + beat)
}

// measureHead counts the header's cells in the widths, once.
func (t *table) measureHead() {
	if t.widths == nil {
		t.measure(tableHead + "\t" + beatHead)
		t.measure(tableHead + "\t" + noBeat)
	}
}

// measure widens the columns to line's cells.
func (t *table) measure(line string) {
	for i := 0; line != ""; i++ {
		cell, rest, _ := strings.Cut(line, "\t")
		if i == len(t.widths) {
			t.widths = append(t.widths, 0)
		}
		t.widths[i] = max(t.widths[i], utf8.RuneCountInString(cell))
		line = rest
	}
}

// write writes the header and the rows.
func (t *table) write(w io.Writer) {
	t.measureHead()
	if t.beaten {
		t.line(w, tableHead+"\t"+beatHead)
	} else {
		t.line(w, tableHead)
	}
	for i, row := range t.rows {
		if t.beaten {
			beat := t.beats[i]
			if beat == "" {
				beat = noBeat
			}
			row += "\t" + beat
		}
		t.line(w, row)
	}
}

// line writes one line's cells, each but the last padded to its column's
// width and two spaces; ATTEMPT's only in a table with attempts.
func (t *table) line(w io.Writer, line string) {
	var b strings.Builder
	for i := 0; ; i++ {
		cell, rest, more := strings.Cut(line, "\t")
		if i == attemptCol && !t.attempted {
			line = rest
			continue
		}
		b.WriteString(cell)
		if !more {
			break
		}
		b.WriteString(strings.Repeat(" ", t.widths[i]-utf8.RuneCountInString(cell)+2))
		line = rest
	}
	b.WriteByte('\n')
	io.WriteString(w, b.String())
}
