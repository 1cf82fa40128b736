package ledgercmd

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
)

// TestStyleFor: colour only on a terminal, unless NO_COLOR is set to
// anything but "" (no-color.org) or TERM is dumb; Unicode only on a
// terminal whose locale (LC_ALL, else LC_CTYPE, else LANG) says UTF-8.
func TestStyleFor(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		terminal bool
		want     style
	}{
		{"a pipe", map[string]string{"LANG": "en_US.UTF-8"}, false, style{}},
		{"a pipe, NO_COLOR", map[string]string{"LANG": "en_US.UTF-8", "NO_COLOR": "1"}, false, style{}},
		{"a terminal", map[string]string{"LANG": "en_US.UTF-8"}, true, style{color: true, unicode: true}},
		{"a terminal, utf8", map[string]string{"LANG": "C.utf8"}, true, style{color: true, unicode: true}},
		{"a terminal, NO_COLOR", map[string]string{"LANG": "en_US.UTF-8", "NO_COLOR": "1"}, true, style{unicode: true}},
		{"a terminal, NO_COLOR empty", map[string]string{"LANG": "en_US.UTF-8", "NO_COLOR": ""}, true, style{color: true, unicode: true}},
		{"a dumb terminal", map[string]string{"LANG": "en_US.UTF-8", "TERM": "dumb"}, true, style{unicode: true}},
		{"a terminal, C locale", map[string]string{"LANG": "C"}, true, style{color: true}},
		{"a terminal, no locale", nil, true, style{color: true}},
		{"LC_ALL wins", map[string]string{"LC_ALL": "C", "LANG": "en_US.UTF-8"}, true, style{color: true}},
		{"LC_CTYPE before LANG", map[string]string{"LC_CTYPE": "de_DE.UTF-8", "LANG": "C"}, true, style{color: true, unicode: true}},
	}
	for _, tt := range tests {
		if got := styleFor(func(k string) string { return tt.env[k] }, tt.terminal); got != tt.want {
			t.Errorf("%s: styleFor = %+v; want %+v", tt.name, got, tt.want)
		}
	}
}

// TestStatusStrip: the strip of a job's runs, oldest left, one glyph per
// outcome and one bar per duration (scaled to the longest), in each
// style; colours never shift the columns.
func TestStatusStrip(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	code, one := 0, 1
	rec := func(st ledger.Status, d time.Duration, exit *int) ledger.Record {
		start := now.Add(-time.Hour)
		r := ledger.Record{ID: "r", Job: "j", Status: st, ClaimedAt: start, StartedAt: start, ExitCode: exit}
		if st.Terminal() {
			r.FinishedAt = start.Add(d)
		} else {
			r.StartedAt = now.Add(-d)
		}
		return r
	}
	runs := []ledger.Record{
		rec(ledger.Completed, 8*time.Second, &code),
		rec(ledger.Failed, time.Second, &one),
		rec(ledger.Unknown, 4*time.Second, nil),
		rec(ledger.Abandoned, 0, nil),
		rec(ledger.Running, 2*time.Second, nil),
	}
	latest := runs[len(runs)-1]
	v := jobView{sum: ledger.Summary{Job: "j", Latest: latest, LastFinished: runs[3], Live: 1}, last: latest, state: stateRunning}
	tests := []struct {
		name          string
		st            style
		strip, bars   string
		colour, plain bool
	}{
		{"a pipe", style{}, ".F?-*", "#_:_.", false, true},
		{"NO_COLOR on a UTF-8 terminal", style{unicode: true}, "✓✗?-*", "█▁▄▁▂", false, false},
		{"a terminal", style{color: true, unicode: true}, "✓✗?-*", "█▁▄▁▂", true, false},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		writeStatusTable(&b, []jobView{v, {sum: ledger.Summary{Job: "other-job"}, state: stateNever}}, map[string][]ledger.Record{"j": runs}, now, tt.st)
		out := b.String()
		plain := stripSGR(out)
		lines := strings.Split(strings.TrimSuffix(plain, "\n"), "\n")
		if len(lines) != 3 {
			t.Fatalf("%s: writeStatusTable = %q; want 3 lines", tt.name, out)
		}
		if f := strings.Fields(lines[1]); len(f) != 9 || f[7] != tt.strip || f[8] != tt.bars {
			t.Errorf("%s: the row of j = %q; want its strip %q and bars %q", tt.name, lines[1], tt.strip, tt.bars)
		}
		if got := strings.Contains(out, "\x1b["); got != tt.colour {
			t.Errorf("%s: colour in %q = %v; want %v", tt.name, out, got, tt.colour)
		}
		if tt.colour && !strings.Contains(out, "\x1b[31m✗\x1b[0m") {
			t.Errorf("%s: %q has no red ✗", tt.name, out)
		}
		ascii := true
		for _, r := range out {
			ascii = ascii && r < 0x80
		}
		if ascii != tt.plain {
			t.Errorf("%s: ASCII only = %v; want %v", tt.name, ascii, tt.plain)
		}
		// Columns line up by the text, colours or not: STATE starts at
		// one column on every line.
		col := strings.Index(lines[0], "STATE")
		for _, l := range lines[1:] {
			if r := []rune(l); len(r) <= col || r[col-1] != ' ' || r[col] == ' ' {
				t.Errorf("%s: %q does not line up with %q", tt.name, l, lines[0])
			}
		}
	}
}

// stripSGR removes the colours.
func stripSGR(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b {
			for i < len(s) && s[i] != 'm' {
				i++
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// TestAgoText: two units at most.
func TestAgoText(t *testing.T) {
	for d, want := range map[time.Duration]string{
		12 * time.Second:            "12s",
		250 * time.Second:           "4m10s",
		3*time.Hour + 5*time.Minute: "3h5m",
		51 * time.Hour:              "2d3h",
		-5 * time.Second:            "-5s",
	} {
		if got := agoText(d); got != want {
			t.Errorf("agoText(%v) = %q; want %q", d, got, want)
		}
	}
}

// TestStatusStripDecades: a duration of decades (a clock stepped a long
// way) scales without overflowing.
func TestStatusStripDecades(t *testing.T) {
	now := time.Date(2090, 12, 1, 0, 0, 0, 0, time.UTC)
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	runs := []ledger.Record{
		{ID: "a", Status: ledger.Completed, ClaimedAt: start, StartedAt: start, FinishedAt: start.Add(time.Second)},
		{ID: "b", Status: ledger.Running, ClaimedAt: start, StartedAt: start},
	}
	if _, bars := (style{}).strip(runs, now); bars.text != "_#" {
		t.Errorf("strip of a second and 64 years = %q; want %q", bars.text, "_#")
	}
}
