package form

import (
	"encoding/json"
	"strconv"

	"github.com/tether-sh/tether/lib/internal/shortcut"
)

// The keys of a record's JSON form, once: the canonical writer (here),
// the stored form's canonical and stored-bytes readers
// (lib/ledger/filestore/wire), --field (lib/ledger's Record.Field) and
// the list of field names are all derived from these tables; Record
// itself, its tags (encoding/json's side) and the conversions to and from
// ledger.Record are generated from Fields (record_gen.go), while Owner's
// and Child's tags are written to match their tables (TestFieldTables).

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
	// NotNull, in Fields, for a string: the value is written as itself,
	// never null (the id and the job, which every record has); any other
	// string is null when empty.
	NotNull bool
	// Val returns a pointer to the value: *string, **string, *bool,
	// *int, **int, **uint64, **Owner or **Child. Fields' are generated
	// (recordVal, record_gen.go); OwnerFields' and ChildFields' are
	// written here.
	Val func(*T) any
	// Rec, in Fields, names the field the key holds, in ledger.Record
	// and in Record alike. Record's field, its type and tag, recordVal,
	// the conversions both ways (lib/ledger's Record.Form, wire's
	// fromForm) and the stored-bytes reader (wire's fill) are generated
	// from it and from ledger.Record's field's type: string (*string,
	// null when empty, unless NotNull), Status (string), bool, time.Time
	// (*string, FormatTime's text), *int, int (*int, null when 0),
	// uint64 (*uint64, null when 0), Owner (*Owner) or proc.ID
	// (*Child). See TestGeneratedUpToDate in lib/ledger/filestore/wire.
	Rec string
}

// Fields is Record's table. A row is all a new key of the form needs
// here: Record's field and Val are generated from it (record_gen.go).
var Fields = withVals([]Field[Record]{
	{Key: "id", NotNull: true, Rec: "ID"},
	{Key: "job", NotNull: true, Rec: "Job"},
	{Key: "source", Rec: "Source"},
	{Key: "instant", Time: true, Ranged: true, Rec: "Instant"},
	{Key: "status", Rec: "Status"},
	{Key: "fenced", Rec: "Fenced"},
	{Key: "fenced_at", Time: true, Rec: "FencedAt"},
	{Key: "owner", Rec: "Owner"},
	{Key: "child", Rec: "Child"},
	{Key: "claimed_at", Time: true, Rec: "ClaimedAt"},
	{Key: "started_at", Time: true, Rec: "StartedAt"},
	{Key: "finished_at", Time: true, Rec: "FinishedAt"},
	{Key: "exit_code", Rec: "ExitCode"},
	{Key: "error", Rec: "Error"},
	// Records written before beats have neither.
	{Key: "beat_at", Optional: true, Time: true, Rec: "BeatAt"},
	{Key: "note", Optional: true, Rec: "Note"},
	// Records written before schedules and retries have none of these.
	{Key: "schedule", Optional: true, Rec: "Schedule"},
	{Key: "attempt", Optional: true, Rec: "Attempt"},
	{Key: "attempts", Optional: true, Rec: "Attempts"},
	// The fencing token; records claimed before tokens have none.
	{Key: "token", Optional: true, Rec: "Token"},
})

// withVals sets the Val of each of fs from its key. A row not yet
// generated is left without one: TestGeneratedUpToDate, which generates
// it, must build and run from the table before record_gen.go has it.
func withVals(fs []Field[Record]) []Field[Record] {
	for i := range fs {
		fs[i].Val = recordVal(fs[i].Key)
	}
	return fs
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
