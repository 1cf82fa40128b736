package ledgercmd

import (
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/syntax"
)

// style is how status draws for its reader: colour (ANSI SGR) and Unicode
// glyphs for a person at a terminal, plain ASCII for a pipe, a file or a
// mail, whatever the locale, so that what a script reads does not depend
// on where it runs.
type style struct {
	color   bool // ANSI colours: a terminal, NO_COLOR unset or empty, TERM not dumb
	unicode bool // ✓ ✗ and ▁▂▃▄▅▆▇█: a terminal with a UTF-8 locale
}

// styleFor is the style for stdout, a terminal or not, in the
// environment getenv reads. NO_COLOR (no-color.org) turns colour off when
// set to anything but ""; a locale (LC_ALL, else LC_CTYPE, else LANG)
// that does not say UTF-8 keeps the glyphs ASCII.
func styleFor(getenv func(string) string, terminal bool) style {
	if !terminal {
		return style{}
	}
	var st style
	st.color = getenv("NO_COLOR") == "" && getenv("TERM") != "dumb"
	for _, v := range []string{"LC_ALL", "LC_CTYPE", "LANG"} {
		if loc := getenv(v); loc != "" {
			loc = strings.ToLower(loc)
			st.unicode = strings.Contains(loc, "utf-8") || strings.Contains(loc, "utf8")
			break
		}
	}
	return st
}

// The colours (SGR parameters) of outcomes and states.
const (
	green  = "32"
	red    = "31"
	yellow = "33"
	cyan   = "36"
)

// paint is s in colour c when st.color (c "" leaves it plain).
func (st style) paint(s, c string) string {
	if !st.color || c == "" {
		return s
	}
	return "\x1b[" + c + "m" + s + "\x1b[0m"
}

// outcome is r's glyph in the strip and its colour:
//
//	            ASCII  Unicode
//	completed   .      ✓
//	failed      F      ✗
//	unknown     ?      ?
//	abandoned   -      -
//	live        *      *
func (st style) outcome(r ledger.Record) (string, string) {
	switch r.Status {
	case ledger.Completed:
		if st.unicode {
			return "✓", green
		}
		return ".", green
	case ledger.Failed:
		if st.unicode {
			return "✗", red
		}
		return "F", red
	case ledger.Unknown:
		return "?", yellow
	case ledger.Abandoned:
		return "-", yellow
	}
	return "*", cyan
}

// The bars of the durations' sparkline, shortest first.
var (
	barsUnicode = []string{"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"}
	barsASCII   = []string{"_", ".", "-", ":", "=", "+", "*", "#"}
)

// strip draws runs (oldest first) as a person takes them in at a glance:
// one glyph per run's outcome, and one bar per run's duration (so far,
// for a live one), scaled to the longest of them, each in its outcome's
// colour. "-" for both when there is none.
func (st style) strip(runs []ledger.Record, now time.Time) (outcomes, durations cell) {
	if len(runs) == 0 {
		return plainCell("-"), plainCell("-")
	}
	bars := barsASCII
	if st.unicode {
		bars = barsUnicode
	}
	var longest time.Duration
	for _, r := range runs {
		longest = max(longest, lastDuration(r, now))
	}
	var o, op, d, dp strings.Builder
	for _, r := range runs {
		g, c := st.outcome(r)
		o.WriteString(g)
		op.WriteString(st.paint(g, c))
		level := 0
		if longest > 0 {
			// In floating point: 7 × a duration of decades overflows.
			level = min(max(int(float64(len(bars)-1)*float64(lastDuration(r, now))/float64(longest)), 0), len(bars)-1)
		}
		d.WriteString(bars[level])
		dp.WriteString(st.paint(bars[level], c))
	}
	return cell{o.String(), op.String()}, cell{d.String(), dp.String()}
}

// stateColor is the colour of a job's state.
func stateColor(state string) string {
	switch state {
	case stateOK:
		return green
	case stateFailing:
		return red
	case stateLate:
		return yellow
	case stateRunning:
		return cyan
	}
	return ""
}

// resultColor is the colour of an execution's status.
func resultColor(s ledger.Status) string {
	switch s {
	case ledger.Completed:
		return green
	case ledger.Failed:
		return red
	case ledger.Unknown, ledger.Abandoned:
		return yellow
	}
	return cyan
}

// cell is one cell of status's table: its text, and the text drawn
// (coloured); the table is laid out by the text's width.
type cell struct{ text, drawn string }

func plainCell(s string) cell { return cell{s, s} }

const statusHead = "JOB\tLAST\tAGO\tRESULT\tSTATE\tNEXT\tDURATION\tRUNS\tDURATIONS"

// writeStatusTable writes one line per job, as systemctl list-timers
// does: when its newest execution started (LAST, AGO), how it ended
// (RESULT: its status and exit code), the job's state, the slot due next
// (NEXT, "-" when the schedule is unknown), how long the newest ran, and
// the strip of its newest runs, oldest left.
func writeStatusTable(w io.Writer, views []jobView, recent map[string][]ledger.Record, now time.Time, st style) {
	var head []cell
	for _, c := range strings.Split(statusHead, "\t") {
		head = append(head, plainCell(c))
	}
	rows := [][]cell{head}
	for _, v := range views {
		last, ago, result, duration := "-", "-", plainCell("-"), "-"
		if r := v.last; r.ID != "" {
			from := r.StartedAt
			if from.IsZero() {
				from = r.ClaimedAt
			}
			last, ago = tableTime(from), agoText(now.Sub(from))
			text := r.State()
			if r.Status.Terminal() && r.ExitCode != nil {
				text += ":" + strconv.Itoa(*r.ExitCode)
			}
			result = cell{text, st.paint(text, resultColor(r.Status))}
			duration = syntax.ShortDuration(lastDuration(r, now))
		} else if ranBefore(v.sum) > 0 {
			result = plainCell("pruned")
		}
		state := plainCell("-")
		if v.state != "" {
			state = cell{v.state, st.paint(v.state, stateColor(v.state))}
		}
		next := "-"
		if !v.next.IsZero() {
			next = tableTime(v.next)
		}
		outcomes, durations := st.strip(recent[v.sum.Job], now)
		rows = append(rows, []cell{plainCell(v.sum.Job), plainCell(last), plainCell(ago), result, state,
			plainCell(next), plainCell(duration), outcomes, durations})
	}
	writeCells(w, rows)
}

// writeCells lays rows out as text/tabwriter would (columns two spaces
// wider than their widest text, the last cell unpadded), by the text's
// width in runes, so that colours do not shift the columns.
func writeCells(w io.Writer, rows [][]cell) {
	var widths []int
	for _, row := range rows {
		for i, c := range row {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c.text))
		}
	}
	var b strings.Builder
	for _, row := range rows {
		for i, c := range row {
			b.WriteString(c.drawn)
			if i < len(row)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c.text)+2))
			}
		}
		b.WriteByte('\n')
	}
	io.WriteString(w, b.String())
}

// agoText is how long ago, to two units: 12s, 4m10s, 3h5m, 2d3h.
func agoText(d time.Duration) string {
	if d < 0 {
		return "-" + agoText(-d)
	}
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return strconv.FormatInt(s, 10) + "s"
	case s < 3600:
		return strconv.FormatInt(s/60, 10) + "m" + strconv.FormatInt(s%60, 10) + "s"
	case s < 86400:
		return strconv.FormatInt(s/3600, 10) + "h" + strconv.FormatInt(s%3600/60, 10) + "m"
	}
	return strconv.FormatInt(s/86400, 10) + "d" + strconv.FormatInt(s%86400/3600, 10) + "h"
}

// statusJSON is one job of status --json: every key present, null when
// unknown, as records are.
type statusJSON struct {
	Job             string            `json:"job"`
	Status          *string           `json:"status"`
	ID              *string           `json:"id"`
	FinishedAt      *time.Time        `json:"finished_at"`
	DurationSeconds *float64          `json:"duration_seconds"`
	ExitCode        *int              `json:"exit_code"`
	LastSuccessAt   *time.Time        `json:"last_success_at"`
	Running         int               `json:"running"`
	Runs            map[string]uint64 `json:"runs"`
	StartedAt       *time.Time        `json:"started_at"`
	State           *string           `json:"state"`
	Schedule        *string           `json:"schedule"`
	NextAt          *time.Time        `json:"next_at"`
	GraceSeconds    *float64          `json:"grace_seconds"`
	LateSeconds     *float64          `json:"late_seconds"`
	Recent          []recentJSON      `json:"recent"`
}

// recentJSON is one run of status --json's recent, oldest first.
type recentJSON struct {
	ID              string     `json:"id"`
	Status          string     `json:"status"`
	ExitCode        *int       `json:"exit_code"`
	StartedAt       *time.Time `json:"started_at"`
	DurationSeconds float64    `json:"duration_seconds"`
}

func utcPtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

func writeStatusJSON(w io.Writer, views []jobView, recent map[string][]ledger.Record, now time.Time) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, v := range views {
		s := v.sum
		o := statusJSON{Job: s.Job, Running: s.Live, Runs: map[string]uint64{}, Recent: []recentJSON{}}
		for _, st := range ledger.Statuses {
			if st.Terminal() {
				o.Runs[string(st)] = s.Runs[st]
			}
		}
		if r := v.last; r.ID != "" {
			state, id := r.State(), r.ID
			o.Status, o.ID = &state, &id
			o.FinishedAt = utcPtr(r.FinishedAt)
			from := r.StartedAt
			if from.IsZero() {
				from = r.ClaimedAt
			}
			o.StartedAt = utcPtr(from)
			if !r.ClaimedAt.IsZero() {
				d := lastDuration(r, now).Seconds()
				o.DurationSeconds = &d
			}
			o.ExitCode = r.ExitCode
		}
		if r := s.LastSuccess; r.ID != "" {
			o.LastSuccessAt = utcPtr(r.FinishedAt)
		}
		if v.state != "" {
			state := v.state
			o.State = &state
		}
		if v.schedule != "" {
			sched := v.schedule
			o.Schedule = &sched
		}
		if !v.next.IsZero() {
			o.NextAt = utcPtr(v.next)
			grace, late := v.grace.Seconds(), v.late.Seconds()
			o.GraceSeconds, o.LateSeconds = &grace, &late
		}
		for _, r := range recent[s.Job] {
			from := r.StartedAt
			if from.IsZero() {
				from = r.ClaimedAt
			}
			o.Recent = append(o.Recent, recentJSON{ID: r.ID, Status: r.State(), ExitCode: r.ExitCode,
				StartedAt: utcPtr(from), DurationSeconds: lastDuration(r, now).Seconds()})
		}
		if err := enc.Encode(o); err != nil {
			return err
		}
	}
	return nil
}
