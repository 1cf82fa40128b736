package ledger

import (
	"strconv"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/spec"
)

func FuzzDecode(f *testing.F) {
	code := 1
	r := Record{
		ID: "0dn7yrqdrcn2j-shf3lc", Job: "backup", Source: "cron", Instant: time.Unix(1714557600, 0).UTC(),
		Status: Running, Fenced: true, FencedAt: time.Unix(1714557601, 0).UTC(),
		Owner:     Owner{Host: "h", BootID: "b", PID: 42, Start: 7},
		ClaimedAt: time.Unix(1714557600, 1).UTC(), StartedAt: time.Unix(1714557602, 0).UTC(),
	}
	f.Add(r.Encode())
	r.Status, r.FinishedAt, r.ExitCode, r.Error = Failed, time.Unix(1714557603, 0).UTC(), &code, "x"
	f.Add(r.Encode())
	b, _ := r.MarshalJSON()
	f.Add(b)
	f.Add([]byte(`{"v":1}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"v":1,"id":"a","job":"j","status":"claimed","claimed_at":"2024-01-01T00:00:00Z","owner":{"pid":1}} x`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Decode(b, "")
		if err != nil {
			return
		}
		// The state machine's invariants, stated apart from Validate,
		// which Decode itself runs.
		if err := legalRecord(r); err != "" {
			t.Fatalf("Decode(%q) accepted an illegal record: %s", b, err)
		}
		enc := r.Encode()
		r2, err := Decode(enc, r.ID)
		if err != nil {
			t.Fatalf("Decode(encode(Decode(%q))) = %v", b, err)
		}
		if enc2 := r2.Encode(); string(enc2) != string(enc) {
			t.Fatalf("re-encoding differs:\n%s\n%s", enc, enc2)
		}
	})
}

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
		d, err := spec.ParseDuration(s)
		if err != nil {
			return
		}
		if d < 0 || d > 100*365*24*time.Hour {
			t.Fatalf("ParseDuration(%q) = %v: out of range", s, d)
		}
	})
}

// legalRecord states what every stored record must satisfy, independently
// of Record.Validate; it returns what is wrong, or "".
func legalRecord(r Record) string {
	switch {
	case ValidID(r.ID) != nil:
		return "malformed id"
	case ValidJob(r.Job) != nil:
		return "malformed job"
	case r.ClaimedAt.IsZero():
		return "no claimed_at"
	case r.Owner.PID < 1:
		return "no owner"
	case r.Fenced == r.FencedAt.IsZero():
		return "fenced disagrees with fenced_at"
	case r.ExitCode != nil && (*r.ExitCode < 0 || *r.ExitCode > 255):
		return "exit code out of range"
	}
	started, finished := !r.StartedAt.IsZero(), !r.FinishedAt.IsZero()
	switch r.Status {
	case Claimed:
		if started || finished {
			return "a claim that started or finished"
		}
	case Running:
		if !started || finished {
			return "running without a start, or finished"
		}
	case Completed, Unknown:
		if !started || !finished {
			return string(r.Status) + " without both start and finish"
		}
	case Failed:
		if !finished {
			return "failed without a finish"
		}
	case Abandoned:
		if started || !finished {
			return "abandoned but started, or not finished"
		}
	default:
		return "unknown status"
	}
	return ""
}
