package ledger

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/ledger/internal/form"
	"github.com/tether-sh/tether/lib/proc"
)

// beaten is a running record that has beaten, with a note, and every
// other field set.
func beaten() Record {
	code := 0
	t0 := time.Unix(1714557600, 123456789).UTC()
	return Record{
		ID: "0dn7yrqdrcn2j-shf3lc", Job: "backup.db:nightly@host-1", Source: "cron", Instant: time.Unix(1714557600, 0).UTC(),
		Status: Completed, Fenced: true, FencedAt: t0.Add(time.Second),
		Owner:     Owner{Host: "web-1", BootID: "4f8c2e7a-1b2d-4c3e-9f00-0123456789ab", PIDNS: 4026531836, PID: 4242, Start: 987654},
		Child:     proc.ID{PID: 4243, Start: 987700},
		ClaimedAt: t0, StartedAt: t0.Add(2 * time.Second), FinishedAt: t0.Add(time.Minute), ExitCode: &code,
		BeatAt: t0.Add(30 * time.Second), Note: "stalled:idle",
	}
}

// TestBeatFields: a beat's fields are checked like every other field and
// reachable through --field.
func TestBeatFields(t *testing.T) {
	r := beaten()
	for _, tc := range []struct {
		name string
		edit func(r *Record)
		ok   bool
	}{
		{"beat and note", func(r *Record) {}, true},
		{"beat alone", func(r *Record) { r.Note = "" }, true},
		{"note without beat", func(r *Record) { r.BeatAt = time.Time{} }, false},
		{"note too long", func(r *Record) { r.Note = string(bytes.Repeat([]byte("x"), maxNoteLen+1)) }, false},
	} {
		c := r
		tc.edit(&c)
		if err := c.Validate(); (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrCorrupt)) {
			t.Errorf("Validate(%s) = %v; want ok=%v", tc.name, err, tc.ok)
		}
	}
	for field, want := range map[string]string{"beat_at": "2024-05-01T10:00:30.123456789Z", "note": "stalled:idle"} {
		if got, err := r.Field(field); err != nil || got != want {
			t.Errorf("Field(%q) = %q, %v; want %q", field, got, err, want)
		}
	}
}

// TestFieldTables: form.Record's, form.Owner's and form.Child's JSON tags
// (encoding/json's side) spell the tables' keys, in the tables' order,
// and --field takes every key.
func TestFieldTables(t *testing.T) {
	check := func(name string, typ reflect.Type, skip int, keys []string) {
		t.Helper()
		var tags []string
		for i := skip; i < typ.NumField(); i++ {
			tag, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			tags = append(tags, tag)
		}
		if !reflect.DeepEqual(tags, keys) {
			t.Errorf("%s tags = %v; table keys %v", name, tags, keys)
		}
	}
	keysOf := func(n int, key func(int) string) []string {
		var out []string
		for i := 0; i < n; i++ {
			out = append(out, key(i))
		}
		return out
	}
	check("form.Record", reflect.TypeOf(form.Record{}), 1, keysOf(len(form.Fields), func(i int) string { return form.Fields[i].Key }))
	check("form.Owner", reflect.TypeOf(form.Owner{}), 0, keysOf(len(form.OwnerFields), func(i int) string { return form.OwnerFields[i].Key }))
	check("form.Child", reflect.TypeOf(form.Child{}), 0, keysOf(len(form.ChildFields), func(i int) string { return form.ChildFields[i].Key }))
	r := beaten()
	for _, name := range strings.Split(fieldNames(), ", ") {
		if _, err := r.Field(name); err != nil {
			t.Errorf("Field(%q) = %v", name, err)
		}
	}
	for _, bad := range []string{"", "nope", "owner.nope", "fenced.x", "child.host", "late"} {
		if _, err := r.Field(bad); !errors.Is(err, ErrBadInput) {
			t.Errorf("Field(%q) = %v; want ErrBadInput", bad, err)
		}
	}
}
