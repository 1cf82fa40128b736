package wire

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/proc"
)

// FuzzDecode: whatever Decode accepts is a legal record, and encodes to
// bytes that decode to the same.
func FuzzDecode(f *testing.F) {
	code := 1
	r := ledger.Record{
		ID: "0dn7yrqdrcn2j-shf3lc", Job: "backup", Source: "cron", Instant: time.Unix(1714557600, 0).UTC(),
		Status: ledger.Running, Fenced: true, FencedAt: time.Unix(1714557601, 0).UTC(),
		Owner:     ledger.Owner{Host: "h", BootID: "b", PID: 42, Start: 7},
		ClaimedAt: time.Unix(1714557600, 1).UTC(), StartedAt: time.Unix(1714557602, 0).UTC(),
	}
	f.Add(Encode(r))
	r.Status, r.FinishedAt, r.ExitCode, r.Error = ledger.Failed, time.Unix(1714557603, 0).UTC(), &code, "x"
	f.Add(Encode(r))
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
		enc := Encode(r)
		r2, err := Decode(enc, r.ID)
		if err != nil {
			t.Fatalf("Decode(encode(Decode(%q))) = %v", b, err)
		}
		if enc2 := Encode(r2); string(enc2) != string(enc) {
			t.Fatalf("re-encoding differs:\n%s\n%s", enc, enc2)
		}
	})
}

func TestDecodeRoundTrip(t *testing.T) {
	t.Parallel()
	code := 137
	r := ledger.Record{
		ID: "0dn7yrqdrcn2j-shf3lc", Job: "backup", Source: "cron", Instant: time.Unix(1714557600, 0).UTC(),
		Status: ledger.Unknown, Fenced: true, FencedAt: time.Unix(1714557601, 5).UTC(),
		Owner: ledger.Owner{Host: "h", BootID: "b", PID: 42, Start: 7}, Child: proc.ID{PID: 43, Start: 8},
		ClaimedAt: time.Unix(1714557600, 1).UTC(), StartedAt: time.Unix(1714557602, 0).UTC(),
		FinishedAt: time.Unix(1714557603, 0).UTC(), ExitCode: &code, Error: "gone; " + ledger.UnknownSideEffects,
	}
	got, err := Decode(Encode(r), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if string(Encode(got)) != string(Encode(r)) {
		t.Fatalf("Decode(encode(r)) = %s; want %s", Encode(got), Encode(r))
	}
	// --json output decodes too, and has every key.
	b, _ := r.MarshalJSON()
	if _, err := Decode(b, r.ID); err != nil {
		t.Fatalf("Decode(MarshalJSON) = %v", err)
	}
	var empty ledger.Record
	empty.ID, empty.Job, empty.Status, empty.ClaimedAt, empty.Owner.PID = "a", "j", ledger.Claimed, time.Unix(1, 0), 1
	b, _ = empty.MarshalJSON()
	for _, k := range []string{"id", "job", "source", "instant", "status", "fenced", "fenced_at", "owner", "child",
		"claimed_at", "started_at", "finished_at", "exit_code", "error", "beat_at", "note", "host", "boot_id", "pid", "start"} {
		if !strings.Contains(string(b), `"`+k+`":`) {
			t.Errorf("MarshalJSON = %s; missing key %q", b, k)
		}
	}
	if _, err := Decode(Encode(r), "0dn7yrqdrcn2j-other0"); !errors.Is(err, ledger.ErrCorrupt) {
		t.Errorf("Decode(wrong id) = %v; want ledger.ErrCorrupt", err)
	}
}

// legalRecord states what every stored record must satisfy, independently
// of Record.Validate; it returns what is wrong, or "".
func legalRecord(r ledger.Record) string {
	switch {
	case ledger.ValidID(r.ID) != nil:
		return "malformed id"
	case ledger.ValidJob(r.Job) != nil:
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
	case ledger.Claimed:
		if started || finished {
			return "a claim that started or finished"
		}
	case ledger.Running:
		if !started || finished {
			return "running without a start, or finished"
		}
	case ledger.Completed, ledger.Unknown:
		if !started || !finished {
			return string(r.Status) + " without both start and finish"
		}
	case ledger.Failed:
		if !finished {
			return "failed without a finish"
		}
	case ledger.Abandoned:
		if started || !finished {
			return "abandoned but started, or not finished"
		}
	default:
		return "unknown status"
	}
	return ""
}
