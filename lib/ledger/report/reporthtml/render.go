package reporthtml

import (
	_ "embed"
	"html/template"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/report"
	"github.com/tether-sh/tether/lib/syntax"
)

//go:embed report.html
var pageText string

// page is parsed when the first report is rendered, not at every ledger
// start: the binary that runs every cron tick links this package.
var page = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Parse(pageText))
})

// Render writes p as one HTML page to w.
func Render(w io.Writer, p *report.Page) error {
	return page().Execute(w, newView(p))
}

// look is how a status shows: a glyph and a word beside its colour, so
// that colour is never the only signal.
type look struct {
	State, Class, Glyph, Label string
}

// looks are the states in the order the legend shows them.
var looks = []look{
	{"completed", "completed", "✓", "completed"},
	{"failed", "failed", "✗", "failed"},
	{"unknown", "unknown", "?", "unknown (its owner vanished after it started)"},
	{"abandoned", "abandoned", "–", "abandoned (its owner vanished before it started)"},
	{"running", "running", "▶", "running"},
	{"claimed", "claimed", "○", "claimed"},
	{"claimed+fenced", "claimed", "◇", "claimed+fenced (handed off)"},
}

func lookOf(state string) look {
	for _, l := range looks {
		if l.State == state {
			return l
		}
	}
	return look{state, "other", "·", state}
}

type view struct {
	*report.Page
	Store     string
	Problems  []string
	Generated string
	Jobs      []jobView
	Legend    []look
}

type jobView struct {
	Name        string
	Latest      look
	LatestRun   *runView
	Never       bool // nothing stored, and no run counted
	Pruned      bool // every record pruned
	LastSuccess string
	Counts      []count
	Live        []runView
	Runs        []runView // oldest first
	Counted     uint64    // the runs its summary counts, pruned ones included
	Chart       chart
	Failure     *failureView
	Schedule    string // as recorded, "" unknown
	Next        string // its next slot, "" none
}

type count struct {
	look
	N uint64
}

type runView struct {
	look
	ID, Claimed, Started, Finished, Since string
	Duration, Exit, Error, Note, Source   string
	Owner, Title                          string
	// Ran is how long it ran, or "live for" how long so far.
	Ran string
	// Slot is its instant ("" none); Attempt "k of N" for a retried
	// run ("" when not counted).
	Slot, Attempt string
}

type failureView struct {
	Run     runView
	Output  string
	Skipped int64
	Missing string
}

func newView(p *report.Page) view {
	v := view{Page: p, Store: text(p.Store), Generated: stamp(p.Generated), Legend: looks}
	for _, m := range p.Problems {
		v.Problems = append(v.Problems, text(m))
	}
	for _, j := range p.Jobs {
		v.Jobs = append(v.Jobs, newJobView(j, p.Generated))
	}
	return v
}

func newJobView(j report.Job, now time.Time) jobView {
	s := j.Summary
	jv := jobView{Name: s.Job, LastSuccess: "never", Counted: ran(s) + uint64(s.Live)}
	latest := s.Latest
	if latest.ID == "" {
		latest = s.LastFinished
		jv.Pruned = latest.ID != "" || ran(s) > 0
	}
	jv.Never = latest.ID == "" && ran(s) == 0
	switch {
	case jv.Never:
		jv.Latest = look{"never ran", "other", "·", "never ran"}
	case latest.ID == "":
		jv.Latest = look{"pruned", "other", "·", "pruned"}
	}
	if latest.ID != "" {
		r := newRunView(latest, now)
		jv.Latest, jv.LatestRun = r.look, &r
	}
	if s.LastSuccess.ID != "" {
		jv.LastSuccess = stamp(s.LastSuccess.FinishedAt)
	}
	for _, st := range ledger.Statuses {
		if st.Terminal() {
			jv.Counts = append(jv.Counts, count{lookOf(string(st)), s.Runs[st]})
		}
	}
	for _, r := range j.Live {
		jv.Live = append(jv.Live, newRunView(r, now))
	}
	for _, r := range j.Recent {
		jv.Runs = append(jv.Runs, newRunView(r, now))
	}
	jv.Schedule = text(j.Schedule)
	if !j.Next.IsZero() {
		jv.Next = stamp(j.Next)
	}
	jv.Chart = newChart(j.Recent, now)
	if j.Failure.ID != "" {
		jv.Failure = &failureView{
			Run:     newRunView(j.Failure, now),
			Output:  text(string(j.Output.Bytes)),
			Skipped: j.Output.Skipped,
			Missing: j.Output.Missing,
		}
	}
	return jv
}

// ran counts s's finished executions, pruned ones included.
func ran(s ledger.Summary) uint64 {
	var n uint64
	for _, c := range s.Runs {
		n += c
	}
	return n
}

func newRunView(r ledger.Record, now time.Time) runView {
	v := runView{
		look:     lookOf(r.State()),
		ID:       r.ID,
		Claimed:  stamp(r.ClaimedAt),
		Started:  stamp(r.StartedAt),
		Finished: stamp(r.FinishedAt),
		Duration: syntax.ShortDuration(duration(r, now)),
		Error:    text(r.Error),
		Note:     text(r.Note),
		Source:   text(r.Source),
		Owner:    text(r.Owner.String()),
		Exit:     "-",
	}
	v.Ran = "ran " + v.Duration
	if !r.Status.Terminal() {
		v.Ran = "live for " + v.Duration
	}
	v.Since = v.Started
	if r.StartedAt.IsZero() {
		v.Since = v.Claimed
	}
	if r.ExitCode != nil {
		v.Exit = strconv.Itoa(*r.ExitCode)
	}
	if !r.Instant.IsZero() {
		v.Slot = stamp(r.Instant)
	}
	if r.Attempt > 0 {
		v.Attempt = strconv.Itoa(r.Attempt)
		if r.Attempts > 0 {
			v.Attempt += " of " + strconv.Itoa(r.Attempts)
		}
	}
	title := []string{v.State}
	if v.Slot != "" {
		title = append(title, "slot "+v.Slot)
	}
	if v.Attempt != "" {
		title = append(title, "attempt "+v.Attempt)
	}
	title = append(title, "claimed "+v.Claimed, v.Ran)
	if r.ExitCode != nil {
		title = append(title, "exit "+v.Exit)
	}
	if v.Error != "" {
		title = append(title, v.Error)
	}
	v.Title = strings.Join(title, " · ")
	return v
}

// duration is how long r ran: from its start (its claim, if it never
// started) to its end, or to now while it is live.
func duration(r ledger.Record, now time.Time) time.Duration {
	from, to := r.StartedAt, r.FinishedAt
	if from.IsZero() {
		from = r.ClaimedAt
	}
	if to.IsZero() {
		to = now
	}
	if from.IsZero() || to.Before(from) {
		return 0
	}
	return to.Sub(from)
}

// chart is the durations of a job's recent runs as inline SVG bars, one
// per run, oldest left, scaled to the longest.
type chart struct {
	W, H  int
	Bars  []bar
	Label string
}

type bar struct {
	X, Y, W, H int
	Class      string
	Title      string
}

const (
	barW, barGap, chartH = 16, 2, 40
)

func newChart(runs []ledger.Record, now time.Time) chart {
	c := chart{W: max(len(runs)*(barW+barGap), barW), H: chartH}
	if len(runs) == 0 {
		c.Label = "no runs"
		return c
	}
	ds := make([]time.Duration, len(runs))
	var longest time.Duration
	for i, r := range runs {
		ds[i] = duration(r, now)
		longest = max(longest, ds[i])
	}
	for i, r := range runs {
		h := 1
		if longest > 0 {
			h = max(int(int64(chartH)*int64(ds[i])/int64(longest)), 1)
		}
		l := lookOf(r.State())
		c.Bars = append(c.Bars, bar{
			X: i * (barW + barGap), Y: chartH - h, W: barW, H: h,
			Class: l.Class, Title: l.State + " " + syntax.ShortDuration(ds[i]) + " (" + r.ID + ")",
		})
	}
	sorted := append([]time.Duration(nil), ds...)
	sort.Slice(sorted, func(a, b int) bool { return sorted[a] < sorted[b] })
	c.Label = "Durations of the last " + strconv.Itoa(len(runs)) + " runs, oldest left: longest " +
		syntax.ShortDuration(longest) + ", median " + syntax.ShortDuration(sorted[len(sorted)/2])
	return c
}

// stamp is t as the page shows a time: RFC 3339 in UTC, to the second;
// "-" for none.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05Z")
}

// text is s as the page shows it: html/template escapes it, and here
// what is not text becomes visible: bytes that are not UTF-8 read as
// U+FFFD, control characters other than tab and line ends as their
// pictures (NUL ␀, ESC ␛), which no browser swallows.
func text(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return r
		case r < 0x20:
			return 0x2400 + r
		case r == 0x7f:
			return 0x2421
		}
		return r
	}, s)
}
