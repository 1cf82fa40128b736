package wire

import (
	"strings"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/internal/shortcut"
	"github.com/tether-sh/tether/lib/ledger"
)

// decoded is the version a claim and delta stand for, decoded.
func decoded(claim, delta []byte, id string) (ledger.Record, error) {
	r, err := Decode(claim, id)
	if err == nil && delta != nil {
		r, err = ApplyDelta(r, delta)
	}
	return r, err
}

// viaRecord is what AppendStoredJSON stands for: the claim and delta
// decoded, then printed.
func viaRecord(claim, delta []byte, id string) (string, ledger.Status, error) {
	r, err := decoded(claim, delta, id)
	if err != nil {
		return "", "", err
	}
	b, err := r.MarshalJSON()
	return string(b), r.Status, err
}

// checkStoredFate fails t when StoredFate vouches for claim and delta but
// reads otherwise than decoding them.
func checkStoredFate(t *testing.T, claim, delta []byte, id string) (ok bool) {
	t.Helper()
	st, finished, instant, ok := StoredFate(claim, delta, id)
	if !ok {
		return false
	}
	r, err := decoded(claim, delta, id)
	if err != nil || st != r.Status || !finished.Equal(r.FinishedAt) || !instant.Equal(r.Instant) {
		t.Fatalf("StoredFate(%s, %s) = %s, %v, %v; decoded: %s, %v, %v, %v", claim, delta, st, finished, instant, r.Status, r.FinishedAt, r.Instant, err)
	}
	return true
}

// TestAppendStoredJSON: from a stored claim and delta it prints byte for
// byte what decoding them and MarshalJSON print, or declines.
func TestAppendStoredJSON(t *testing.T) {
	claim, versions := sampleVersions()
	enc := Encode(claim)
	for _, vn := range versions {
		v := vn.r
		want, wantStatus, err := viaRecord(enc, EncodeDelta(v, claim), claim.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, delta := range [][]byte{EncodeDelta(v, claim), nil} {
			if delta == nil {
				if v.Status != ledger.Claimed {
					continue
				}
				want, wantStatus, _ = viaRecord(enc, nil, claim.ID)
			}
			got, st, ok := AppendStoredJSON([]byte("x"), enc, delta, claim.ID)
			// Text JSON escapes is left to the general path.
			plain := plain(v.Source) && plain(v.Error) && plain(v.Note)
			if ok != plain {
				t.Errorf("AppendStoredJSON(%s, %s) ok = %v; want %v", enc, delta, ok, plain)
				continue
			}
			if ok && (string(got) != "x"+want || st != wantStatus) {
				t.Errorf("AppendStoredJSON(%s, %s) = %s, %s; want x%s, %s", enc, delta, got, st, want, wantStatus)
			}
			if fateOK := checkStoredFate(t, enc, delta, claim.ID); fateOK != ok {
				t.Errorf("StoredFate(%s, %s) ok = %v; want %v, as AppendStoredJSON's", enc, delta, fateOK, ok)
			}
		}
	}
}

// TestAppendStoredJSONDeclines: what it cannot vouch for is left to the
// general path (ok false, dst as it was), whether that path reads it
// or refuses it.
func TestAppendStoredJSONDeclines(t *testing.T) {
	claim, _ := sampleVersions()
	enc := string(Encode(claim))
	id := claim.ID
	swap := func(old, new string) string {
		if !strings.Contains(enc, old) {
			t.Fatalf("%q is not in %s", old, enc)
		}
		return strings.Replace(enc, old, new, 1)
	}
	for _, tc := range []struct {
		name, claim, delta, id string
	}{
		{"another id", enc, "", "0dnc1ux353gcz-prda3d"},
		{"a time not in UTC", swap(`37.609547411Z`, `37.609547411+00:00`), "", id},
		{"a fraction with a trailing zero", swap(`37.609547411Z`, `37.6095474110Z`), "", id},
		{"a date that is not", swap(`2026-12-04T15:22:37`, `2026-02-30T15:22:37`), "", id},
		{"the zero time", swap(`2026-12-04T15:22:37.609547411Z`, `0001-01-01T00:00:00Z`), "", id},
		{"an empty source", swap(`"source":"cron"`, `"source":""`), "", id},
		{"an escape", swap(`"source":"cron"`, `"source":"cr\u006fn"`), "", id},
		{"an owner without pidns", swap(`"pidns":4026531836,`, ``), "", id},
		{"a pidns of 0", swap(`"pidns":4026531836`, `"pidns":0`), "", id},
		{"an owner pid of 0", swap(`"pid":1153`, `"pid":0`), "", id},
		{"keys out of order", swap(`"source":"cron","instant"`, `"instant"`), "", id},
		{"a space", swap(`"job":"j"`, `"job": "j"`), "", id},
		{"another format", swap(`{"v":1`, `{"v":2`), "", id},
		{"an unknown status", enc, `{"status":"done"}`, id},
		{"an illegal record", enc, `{"status":"completed"}`, id},
		{"an exit code of -0", enc, `{"status":"failed","finished_at":"2026-12-04T15:22:38Z","exit_code":-0}`, id},
		{"an exit code out of range", enc, `{"status":"failed","finished_at":"2026-12-04T15:22:38Z","exit_code":256}`, id},
		{"a delta setting the id", enc, `{"id":"0dnc1ux353gcz-prda3c"}`, id},
		{"a delta with an unknown key", enc, `{"late":null}`, id},
		{"a delta cut short", enc, `{"status":"running"`, id},
		{"a child of pid 0", enc, `{"status":"running","started_at":"2026-12-04T15:22:38Z","child":{"pid":0,"start":null}}`, id},
	} {
		var delta []byte
		if tc.delta != "" {
			delta = []byte(tc.delta)
		}
		got, st, ok := AppendStoredJSON([]byte("x"), []byte(tc.claim), delta, tc.id)
		if _, _, _, fateOK := StoredFate([]byte(tc.claim), delta, tc.id); fateOK {
			t.Errorf("%s: StoredFate ok; want false", tc.name)
		}
		if ok || string(got) != "x" || st != "" {
			want, _, err := viaRecord([]byte(tc.claim), delta, tc.id)
			t.Errorf("%s: AppendStoredJSON = %s, %q, %v; want x, \"\", false (the general path: %s, %v)", tc.name, got, st, ok, want, err)
		}
	}
	// The shortcut's switch turns it off.
	t.Setenv(shortcut.Env, "stored-bytes")
	if _, _, ok := AppendStoredJSON(nil, []byte(enc), nil, id); ok {
		t.Errorf("%s=stored-bytes: AppendStoredJSON ok; want it off", shortcut.Env)
	}
}

// TestCanonicalTime: what it takes is what formats back as itself.
func TestCanonicalTime(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"2026-12-04T15:22:37.609547411Z", true},
		{"2026-12-04T15:22:37Z", true},
		{"2026-12-04T15:22:37.5Z", true},
		{"2024-02-29T00:00:00Z", true},
		{"2000-02-29T00:00:00Z", true},
		{"0000-01-01T00:00:00Z", true},
		{"9999-12-31T23:59:59.999999999Z", true},
		{"1900-02-29T00:00:00Z", false},
		{"2023-02-29T00:00:00Z", false},
		{"2026-04-31T00:00:00Z", false},
		{"2026-13-01T00:00:00Z", false},
		{"2026-00-01T00:00:00Z", false},
		{"2026-12-00T00:00:00Z", false},
		{"2026-12-04T24:00:00Z", false},
		{"2026-12-04T23:60:00Z", false},
		{"2026-12-04T23:59:60Z", false},
		{"2026-12-04T15:22:37.50Z", false},
		{"2026-12-04T15:22:37.Z", false},
		{"2026-12-04T15:22:37.1234567891Z", false},
		{"2026-12-04T15:22:37+00:00", false},
		{"2026-12-04 15:22:37Z", false},
		{"0001-01-01T00:00:00Z", false},
		{"+026-12-04T15:22:37Z", false},
		{"", false},
	} {
		if got := canonicalTime([]byte(tc.s)); got != tc.want {
			t.Errorf("canonicalTime(%q) = %v; want %v", tc.s, got, tc.want)
		}
		checkCanonicalTime(t, tc.s)
	}
}

// checkCanonicalTime fails t if canonicalTime takes s but s does not
// parse, is the zero time, or formats otherwise.
func checkCanonicalTime(t *testing.T, s string) {
	t.Helper()
	if !canonicalTime([]byte(s)) {
		return
	}
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || tm.IsZero() || ledger.FormatTime(tm) != s {
		t.Fatalf("canonicalTime(%q) = true, but it parses as %v, %v and formats as %q", s, tm, err, ledger.FormatTime(tm))
	}
}

func FuzzCanonicalTime(f *testing.F) {
	for _, s := range []string{"2026-12-04T15:22:37.609547411Z", "2024-02-29T00:00:00Z", "2026-12-04T15:22:37.50Z", "0001-01-01T00:00:00Z"} {
		f.Add(s, int64(0))
	}
	f.Fuzz(func(t *testing.T, s string, ns int64) {
		checkCanonicalTime(t, s)
		// And every time FormatTime writes (but the zero time) is taken.
		if tm := time.Unix(0, ns).UTC(); !canonicalTime([]byte(ledger.FormatTime(tm))) {
			t.Fatalf("canonicalTime(%q) = false; want true (ledger.FormatTime's)", ledger.FormatTime(tm))
		}
	})
}

// FuzzStoredJSON: whatever claim and delta AppendStoredJSON or StoredFate
// vouch for, decoding them reads and prints the same.
func FuzzStoredJSON(f *testing.F) {
	claim, versions := sampleVersions()
	for _, v := range versions {
		f.Add(Encode(claim), EncodeDelta(v.r, claim))
	}
	f.Add(Encode(claim), []byte(`{"status":"failed","finished_at":"2026-12-04T15:22:38Z","exit_code":-0}`))
	f.Fuzz(func(t *testing.T, c, d []byte) {
		checkStoredFate(t, c, d, claim.ID)
		got, st, ok := AppendStoredJSON(nil, c, d, claim.ID)
		if !ok {
			return
		}
		want, wantStatus, err := viaRecord(c, d, claim.ID)
		if err != nil || string(got) != want || st != wantStatus {
			t.Fatalf("AppendStoredJSON(%q, %q) = %s, %s; decoded: %s, %s, %v", c, d, got, st, want, wantStatus, err)
		}
	})
}

// plain is form's test of text written between quotes as itself, by
// the stored-bytes reader's set of bytes.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if plainBytes[s[i]>>6]&(1<<(s[i]&63)) == 0 {
			return false
		}
	}
	return true
}
