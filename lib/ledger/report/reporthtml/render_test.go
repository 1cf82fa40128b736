package reporthtml

import (
	"bytes"
	"html"
	"strings"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/report"
)

var t0 = time.Date(2026, 12, 6, 15, 0, 0, 0, time.UTC)

// rec is a finished record of job, n minutes after t0, that ran d.
func rec(job, id string, n int, st ledger.Status, d time.Duration) ledger.Record {
	claimed := t0.Add(time.Duration(n) * time.Minute)
	r := ledger.Record{ID: id, Job: job, Status: st, ClaimedAt: claimed, Owner: ledger.Owner{Host: "h", PID: 10}}
	if st != ledger.Abandoned && st != ledger.Claimed {
		r.StartedAt = claimed
	}
	if st.Terminal() {
		r.FinishedAt = r.StartedAt.Add(d)
		if st == ledger.Abandoned {
			r.FinishedAt = claimed.Add(d)
		}
	}
	if st == ledger.Completed || st == ledger.Failed {
		code := 0
		if st == ledger.Failed {
			code = 3
		}
		r.ExitCode = &code
	}
	return r
}

func render(t *testing.T, p *report.Page) string {
	t.Helper()
	var b bytes.Buffer
	if err := Render(&b, p); err != nil {
		t.Fatalf("Render = %v", err)
	}
	return b.String()
}

// TestRenderEscapes: free text from the store (outputs, notes, sources,
// errors, owners' host names, the store's location) reaches the page as
// text, whatever it holds; the page's own markup is the only markup.
func TestRenderEscapes(t *testing.T) {
	long := strings.Repeat("x", 64<<10)
	hostile := []struct {
		name, in string
		// shown is what the page must hold (escaped), "" for html.EscapeString(in).
		shown string
	}{
		{"script", `<script>alert(1)</script>`, ""},
		{"style end", `</style><b>bold</b>`, ""},
		{"quotes", `" onmouseover="alert(1)" '`, ""},
		{"comment", `<!-- --><img src=x onerror=alert(1)>`, ""},
		{"cdata svg", `]]></title></rect></svg><svg onload=alert(1)>`, ""},
		{"invalid utf-8", "a\xff\xfeb", "a\uFFFDb"},
		{"NUL and ESC", "a\x00b\x1b[31mc", "a␀b␛[31mc"},
		{"64 KiB line", long, long},
	}
	for _, h := range hostile {
		t.Run(h.name, func(t *testing.T) {
			shown := h.shown
			if shown == "" {
				shown = html.EscapeString(h.in)
			}
			failed := rec("job.1", "01J0000000000000000000FAIL", 2, ledger.Failed, time.Second)
			failed.Error, failed.Source = h.in, h.in
			failed.Owner.Host = h.in
			live := rec("job.1", "01J0000000000000000000LIVE", 3, ledger.Running, 0)
			live.Note, live.BeatAt, live.Owner.Host = h.in, live.ClaimedAt, h.in
			p := &report.Page{
				Store: "/var/lib/" + h.in, Generated: t0.Add(time.Hour), Runs: 50,
				Problems: []string{"corrupt store: " + h.in},
				Jobs: []report.Job{{
					Summary: ledger.Summary{Job: "job.1", Latest: live, LastFinished: failed, Live: 1,
						Runs: map[ledger.Status]uint64{ledger.Failed: 1}},
					Recent: []ledger.Record{failed, live}, Live: []ledger.Record{live},
					Failure: failed, Output: report.Tail{Bytes: []byte("out: " + h.in + "\n")},
				}},
			}
			got := render(t, p)
			if h.in != shown && strings.Contains(got, h.in) {
				t.Errorf("Render(%s) holds the raw text %.60q; want it escaped", h.name, h.in)
			}
			// the store, the problem, the output, the error, the source,
			// the note, the owners' hosts
			if n := strings.Count(got, shown); n < 7 {
				t.Errorf("Render(%s) shows %.60q %d times; want it in each of 7 places at least", h.name, shown, n)
			}
			for _, tag := range []string{"<script", "<img", "<b>", "<svg onload", `onmouseover="`} {
				if strings.Contains(strings.ToLower(got), tag) {
					t.Errorf("Render(%s) holds %q; want no injected markup", h.name, tag)
				}
			}
			if n := strings.Count(got, "</style>"); n != 1 {
				t.Errorf("Render(%s) holds </style> %d times; want once, the page's own", h.name, n)
			}
			if n := strings.Count(got, "</svg>"); n != 1 {
				t.Errorf("Render(%s) holds </svg> %d times; want once, the chart's", h.name, n)
			}
		})
	}
}

// TestRenderSelfContained: the page names nothing outside itself and
// holds no script.
func TestRenderSelfContained(t *testing.T) {
	p := &report.Page{Store: "postgres://u@db/jobs", Generated: t0, Runs: 50, Jobs: []report.Job{{
		Summary: ledger.Summary{Job: "a"},
	}}}
	got := strings.ToLower(render(t, p))
	for _, bad := range []string{"http://", "https://", "src=", "url(", "@import", "<script", "<link", "//fonts", "href=\"/", "href=\"http"} {
		if strings.Contains(got, bad) {
			t.Errorf("Render() holds %q; want a page that fetches nothing", bad)
		}
	}
	if !strings.Contains(got, "default-src 'none'") {
		t.Errorf("Render() has no Content-Security-Policy default-src 'none'")
	}
}

// TestRenderJobs: each job's section says what its summary and runs say,
// with a glyph and a word beside each colour.
func TestRenderJobs(t *testing.T) {
	ok := rec("backup", "01J000000000000000000000OK", 0, ledger.Completed, 2*time.Second)
	bad := rec("backup", "01J00000000000000000000BAD", 1, ledger.Failed, 4*time.Second)
	unk := rec("sync", "01J00000000000000000000UNK", 0, ledger.Unknown, time.Minute)
	gone := rec("sync", "01J0000000000000000000GONE", 1, ledger.Abandoned, 0)
	bad.Instant, bad.Attempt, bad.Attempts = t0, 2, 3
	claimed := rec("sync", "01J00000000000000000CLAIM", 2, ledger.Claimed, 0)
	claimed.Fenced, claimed.FencedAt = true, claimed.ClaimedAt
	p := &report.Page{Store: "/s", Generated: t0.Add(time.Hour), Runs: 50, Jobs: []report.Job{
		{Summary: ledger.Summary{Job: "backup", Latest: bad, LastFinished: bad, LastSuccess: ok,
			Runs: map[ledger.Status]uint64{ledger.Completed: 7, ledger.Failed: 1}},
			Recent: []ledger.Record{ok, bad}, Failure: bad, Output: report.Tail{Missing: "no output was kept"}},
		{Summary: ledger.Summary{Job: "sync", Latest: claimed, Live: 1,
			Runs: map[ledger.Status]uint64{ledger.Unknown: 1, ledger.Abandoned: 1}},
			Recent: []ledger.Record{unk, gone, claimed}, Live: []ledger.Record{claimed}, Failure: unk,
			Output: report.Tail{Bytes: []byte("tail"), Skipped: 100}},
		{Summary: ledger.Summary{Job: "never"}, Schedule: "CRON_TZ=UTC 0 2 * * *", Next: t0.Add(11 * time.Hour)},
		{Summary: ledger.Summary{Job: "pruned", Runs: map[ledger.Status]uint64{ledger.Completed: 3}}},
	}}
	got := render(t, p)
	want := []string{
		`id="job-backup"`, `id="job-sync"`, `id="job-never"`, `id="job-pruned"`,
		`<span class="badge failed">✗ failed</span>`,
		`<span class="badge claimed">◇ claimed&#43;fenced</span>`,
		`· never ran`, `· pruned`,
		`<a href="#job-never"><span class="badge other" aria-hidden="true">·</span> never</a>`,
		`7 completed, 1 failed, 0 unknown, 0 abandoned, 0 live`,
		`0 completed, 0 failed, 1 unknown, 1 abandoned, 1 live`,
		`<dd>2026-12-06T15:00:02Z</dd>`, // backup's last success
		`(the newest 2 of 8, oldest first)`,
		`<li class="completed" title="completed · claimed 2026-12-06T15:00:00Z · ran 2s · exit 0"`,
		`<li class="failed" title="failed · slot 2026-12-06T15:00:00Z · attempt 2 of 3 · claimed 2026-12-06T15:01:00Z · ran 4s · exit 3"`,
		`<p>Slot 2026-12-06T15:00:00Z; Claimed 2026-12-06T15:01:00Z, attempt 2 of 3, finished`,
		`<td>2026-12-06T15:00:00Z</td><td>2 of 3</td>`,
		`<dt>Schedule</dt><dd><code class="schedule">CRON_TZ=UTC 0 2 * * *</code>, next slot <time datetime="2026-12-07T02:00:00Z">2026-12-07T02:00:00Z</time></dd>`,
		`<li class="abandoned"`,
		`no output was kept`,
		`The last 4 bytes of its kept output; 100 bytes before are not shown`,
		`<pre class="output">tail</pre>`,
		`longest 4s, median 4s`,
		`<td>2026-12-06T15:02:00Z</td><td>58m0s</td>`, // the live claim: since, for
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("Render() does not hold %q", w)
		}
	}
}

func TestText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain", "plain"},
		{"tab\tnl\ncr\r", "tab\tnl\ncr\r"},
		{"\x00\x07\x1b\x7f", "␀␇␛␡"},
		{"\xffok\xc3", "\uFFFDok\uFFFD"},
		{"é✓", "é✓"},
	} {
		if got := text(c.in); got != c.want {
			t.Errorf("text(%q) = %q; want %q", c.in, got, c.want)
		}
	}
}

func TestChart(t *testing.T) {
	runs := []ledger.Record{
		rec("j", "a", 0, ledger.Completed, 10*time.Second),
		rec("j", "b", 1, ledger.Failed, 40*time.Second),
		rec("j", "c", 2, ledger.Abandoned, 0),
	}
	c := newChart(runs, t0)
	if len(c.Bars) != 3 {
		t.Fatalf("newChart(3 runs) = %d bars; want 3", len(c.Bars))
	}
	for i, want := range []struct {
		h     int
		class string
	}{{10, "completed"}, {40, "failed"}, {1, "abandoned"}} {
		if b := c.Bars[i]; b.H != want.h || b.Y != chartH-want.h || b.Class != want.class {
			t.Errorf("newChart bar %d = h %d y %d %s; want h %d y %d %s", i, b.H, b.Y, b.Class, want.h, chartH-want.h, want.class)
		}
	}
	if c := newChart(nil, t0); len(c.Bars) != 0 || c.Label != "no runs" {
		t.Errorf("newChart(nil) = %d bars, %q; want none, no runs", len(c.Bars), c.Label)
	}
}
