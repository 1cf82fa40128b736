package form

import (
	"encoding/json"
	"strconv"

	"github.com/tether-sh/tether/lib/internal/shortcut"
)

// The keys of a record's JSON form, once: the canonical writer (here),
// the stored form's canonical and stored-bytes readers
// (lib/ledger/filestore/wire), --field (lib/ledger's Record.Field) and
// the list of field names are all derived from these tables, and
// Record's tags spell the same keys in the same order (encoding/json
// derives its side from the tags).

// Field is one key of T's JSON form and where its value is in a T.
type Field[T any] struct {
	Key string
	// Optional: records written before the key existed lack it; the
	// canonical reader takes its absence, as encoding/json does.
	Optional bool
	// Time: the value is a time, as ledger.FormatTime writes it.
	Time bool
	// Ranged: Validate checks the value itself (its range), not only
	// whether it is set: the stored-bytes reader parses it.
	Ranged bool
	// Val returns a pointer to the value: *string, **string, *bool,
	// *int, **int, **uint64, **Owner or **Child.
	Val func(*T) any
	// Rec, in Fields, names the ledger.Record field the key holds (of
	// type string, Status, bool, time.Time, *int, int, Owner or proc.ID): what
	// the stored-bytes reader sets from the key's value, in code
	// generated from this table (wire's storedfill_gen.go). Empty for the
	// id, which the reader is given.
	Rec string
}

// Fields is Record's table.
var Fields = []Field[Record]{
	{Key: "id", Val: func(j *Record) any { return &j.ID }},
	{Key: "job", Val: func(j *Record) any { return &j.Job }, Rec: "Job"},
	{Key: "source", Val: func(j *Record) any { return &j.Source }, Rec: "Source"},
	{Key: "instant", Time: true, Ranged: true, Val: func(j *Record) any { return &j.Instant }, Rec: "Instant"},
	{Key: "status", Val: func(j *Record) any { return &j.Status }, Rec: "Status"},
	{Key: "fenced", Val: func(j *Record) any { return &j.Fenced }, Rec: "Fenced"},
	{Key: "fenced_at", Time: true, Val: func(j *Record) any { return &j.FencedAt }, Rec: "FencedAt"},
	{Key: "owner", Val: func(j *Record) any { return &j.Owner }, Rec: "Owner"},
	{Key: "child", Val: func(j *Record) any { return &j.Child }, Rec: "Child"},
	{Key: "claimed_at", Time: true, Val: func(j *Record) any { return &j.ClaimedAt }, Rec: "ClaimedAt"},
	{Key: "started_at", Time: true, Val: func(j *Record) any { return &j.StartedAt }, Rec: "StartedAt"},
	{Key: "finished_at", Time: true, Val: func(j *Record) any { return &j.FinishedAt }, Rec: "FinishedAt"},
	{Key: "exit_code", Val: func(j *Record) any { return &j.ExitCode }, Rec: "ExitCode"},
	{Key: "error", Val: func(j *Record) any { return &j.Error }, Rec: "Error"},
	// Records written before beats have neither.
	{Key: "beat_at", Optional: true, Time: true, Val: func(j *Record) any { return &j.BeatAt }, Rec: "BeatAt"},
	{Key: "note", Optional: true, Val: func(j *Record) any { return &j.Note }, Rec: "Note"},
	// Records written before schedules and retries have none of these.
	{Key: "schedule", Optional: true, Val: func(j *Record) any { return &j.Schedule }, Rec: "Schedule"},
	{Key: "attempt", Optional: true, Val: func(j *Record) any { return &j.Attempt }, Rec: "Attempt"},
	{Key: "attempts", Optional: true, Val: func(j *Record) any { return &j.Attempts }, Rec: "Attempts"},
}

// OwnerFields is Owner's table.
var OwnerFields = []Field[Owner]{
	{Key: "host", Val: func(o *Owner) any { return &o.Host }},
	{Key: "boot_id", Val: func(o *Owner) any { return &o.BootID }},
	// Records written before PID namespaces were recorded have none.
	{Key: "pidns", Optional: true, Val: func(o *Owner) any { return &o.PIDNS }},
	{Key: "pid", Val: func(o *Owner) any { return &o.PID }},
	{Key: "start", Val: func(o *Owner) any { return &o.Start }},
}

// ChildFields is Child's table.
var ChildFields = []Field[Child]{
	{Key: "pid", Val: func(c *Child) any { return &c.PID }},
	{Key: "start", Val: func(c *Child) any { return &c.Start }},
}

// Lookup returns the value of key in v's fields, as Field.Val does.
func Lookup[T any](fs []Field[T], v *T, key string) (any, bool) {
	for _, f := range fs {
		if f.Key == key {
			return f.Val(v), true
		}
	}
	return nil, false
}

// plain reports whether s is written by json.Marshal as itself between
// quotes and read back unchanged: printable ASCII without '"', '\\' and
// the '<', '>', '&' that Marshal escapes for HTML.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// AppendCanonical appends json.Marshal(j) to b, or reports false if a
// string in j is not plain. The caller has asked shortcut.Take.
func AppendCanonical(b []byte, j *Record) ([]byte, bool) {
	shortcut.Ran(shortcut.CanonicalCodec)
	ok := true
	sep := byte('{') // before the first key: the brace, or "v"'s comma
	if j.V != 0 {
		b = append(b, `{"v":`...)
		b = strconv.AppendInt(b, int64(j.V), 10)
		sep = ','
	}
	b = AppendKey(b, sep, Fields[0].Key)
	b = appendValue(b, &ok, Fields[0].Val(j))
	b = appendFields(b, &ok, Fields[1:], j, false)
	return b, ok
}

// AppendKey appends sep, then key as a JSON object's key: ,"key":
func AppendKey(b []byte, sep byte, key string) []byte {
	b = append(b, sep, '"')
	b = append(b, key...)
	return append(b, '"', ':')
}

// ValueJSON is one value of the form (as Field.Val points at it) as
// encoding/json writes it: the canonical writer's bytes when every string
// in it is plain.
func ValueJSON(v any) []byte {
	ok := true
	b := appendValue(nil, &ok, v)
	if ok {
		return b
	}
	b, err := json.Marshal(v)
	if err != nil {
		// Only strings, ints and bools: Marshal cannot fail.
		panic("form: encoding a record field: " + err.Error())
	}
	return b
}

// appendFields appends the fields of v, as json.Marshal writes them (the
// opening brace only if brace; the closing one always); ok turns false
// for a string that is not plain.
func appendFields[T any](b []byte, ok *bool, fs []Field[T], v *T, brace bool) []byte {
	for i, f := range fs {
		sep := byte(',')
		if i == 0 && brace {
			sep = '{'
		}
		b = AppendKey(b, sep, f.Key)
		b = appendValue(b, ok, f.Val(v))
	}
	return append(b, '}')
}

func appendValue(b []byte, ok *bool, v any) []byte {
	str := func(s string) []byte {
		if !plain(s) {
			*ok = false
		}
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	switch p := v.(type) {
	case *string:
		return str(*p)
	case **string:
		if *p == nil {
			return append(b, "null"...)
		}
		return str(**p)
	case *bool:
		return strconv.AppendBool(b, *p)
	case *int:
		return strconv.AppendInt(b, int64(*p), 10)
	case **int:
		if *p == nil {
			return append(b, "null"...)
		}
		return strconv.AppendInt(b, int64(**p), 10)
	case **uint64:
		if *p == nil {
			return append(b, "null"...)
		}
		return strconv.AppendUint(b, **p, 10)
	case **Owner:
		if *p == nil {
			return append(b, "null"...)
		}
		return appendFields(b, ok, OwnerFields, *p, true)
	case **Child:
		if *p == nil {
			return append(b, "null"...)
		}
		return appendFields(b, ok, ChildFields, *p, true)
	}
	panic("form: a record field of an unknown kind")
}
