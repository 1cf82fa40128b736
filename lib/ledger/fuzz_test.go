package ledger

import (
	"strconv"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/syntax"
)

func FuzzParseInstant(f *testing.F) {
	for _, s := range []string{"2024-05-01T10:00:00Z", "2024-05-01T12:00:00+02:00", "1714557600", "1714557600.5",
		"0", "9999-12-31T23:59:59.999999999Z", "", "-1", "1e3", "2024-05-01T10:00:00.Z", " 1 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseInstant(s)
		if err != nil {
			return
		}
		if got.Location() != time.UTC || checkInstantRange(got) != nil {
			t.Fatalf("ParseInstant(%q) = %v: not UTC or out of range", s, got)
		}
		again, err := ParseInstant(FormatTime(got))
		if err != nil || !again.Equal(got) {
			t.Fatalf("ParseInstant(FormatTime(ParseInstant(%q))) = %v, %v; want %v", s, again, err, got)
		}
		unix := strconv.FormatInt(got.Unix(), 10)
		if ns := got.Nanosecond(); ns != 0 {
			unix += "." + strconv.Itoa(1e9 + ns)[1:]
		}
		if u, err := ParseInstant(unix); err != nil || !u.Equal(got) {
			t.Fatalf("ParseInstant(%q) = %v, %v; want %v (from %q)", unix, u, err, got, s)
		}
	})
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"250ms", "5s", "2m", "5", "0.5", "1h30m", "-1s", "NaN", "inf", "1e400", "", "0x10", "9223372036s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := syntax.ParseDuration(s)
		if err != nil {
			return
		}
		if d < 0 || d > 100*365*24*time.Hour {
			t.Fatalf("ParseDuration(%q) = %v: out of range", s, d)
		}
	})
}
