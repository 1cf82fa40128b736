package ledger

import (
	"strconv"
	"strings"
)

// The keys of a record's JSON form, once: the canonical codec's writer
// and reader (codec.go), the stored-bytes reader (storedjson.go), --field
// (Record.Field) and the list of field names are all derived from these
// tables, and recordJSON's tags spell the same keys in the same order
// (TestFieldTables holds them together; encoding/json derives its side
// from the tags).

// field is one key of T's JSON form and where its value is in a T: val
// returns a pointer to it (*string, **string, *Status, *bool, *int,
// **int, **uint64, **ownerJSON or **childJSON).
type field[T any] struct {
	key string
	// optional: records written before the key existed lack it; the
	// canonical reader takes its absence, as encoding/json does.
	optional bool
	// time: the value is a time, as FormatTime writes it.
	time bool
	// ranged: Validate checks the value itself (its range), not only
	// whether it is set: the stored-bytes reader parses it.
	ranged bool
	val    func(*T) any
	// rec, in recordFields, names the Record field the key holds (of
	// type string, Status, bool, time.Time, *int, Owner or proc.ID): what
	// the stored-bytes reader sets from the key's value, in code
	// generated from this table (storedfill_gen.go). Empty for the id,
	// which the reader is given.
	rec string
}

var recordFields = []field[recordJSON]{
	{key: "id", val: func(j *recordJSON) any { return &j.ID }},
	{key: "job", val: func(j *recordJSON) any { return &j.Job }, rec: "Job"},
	{key: "source", val: func(j *recordJSON) any { return &j.Source }, rec: "Source"},
	{key: "instant", time: true, ranged: true, val: func(j *recordJSON) any { return &j.Instant }, rec: "Instant"},
	{key: "status", val: func(j *recordJSON) any { return &j.Status }, rec: "Status"},
	{key: "fenced", val: func(j *recordJSON) any { return &j.Fenced }, rec: "Fenced"},
	{key: "fenced_at", time: true, val: func(j *recordJSON) any { return &j.FencedAt }, rec: "FencedAt"},
	{key: "owner", val: func(j *recordJSON) any { return &j.Owner }, rec: "Owner"},
	{key: "child", val: func(j *recordJSON) any { return &j.Child }, rec: "Child"},
	{key: "claimed_at", time: true, val: func(j *recordJSON) any { return &j.ClaimedAt }, rec: "ClaimedAt"},
	{key: "started_at", time: true, val: func(j *recordJSON) any { return &j.StartedAt }, rec: "StartedAt"},
	{key: "finished_at", time: true, val: func(j *recordJSON) any { return &j.FinishedAt }, rec: "FinishedAt"},
	{key: "exit_code", val: func(j *recordJSON) any { return &j.ExitCode }, rec: "ExitCode"},
	{key: "error", val: func(j *recordJSON) any { return &j.Error }, rec: "Error"},
	// Records written before beats have neither.
	{key: "beat_at", optional: true, time: true, val: func(j *recordJSON) any { return &j.BeatAt }, rec: "BeatAt"},
	{key: "note", optional: true, val: func(j *recordJSON) any { return &j.Note }, rec: "Note"},
}

var ownerFields = []field[ownerJSON]{
	field[ownerJSON]{key: "host", val: func(o *ownerJSON) any { return &o.Host }},
	field[ownerJSON]{key: "boot_id", val: func(o *ownerJSON) any { return &o.BootID }},
	// Records written before PID namespaces were recorded have none.
	field[ownerJSON]{key: "pidns", optional: true, val: func(o *ownerJSON) any { return &o.PIDNS }},
	field[ownerJSON]{key: "pid", val: func(o *ownerJSON) any { return &o.PID }},
	field[ownerJSON]{key: "start", val: func(o *ownerJSON) any { return &o.Start }},
}

var childFields = []field[childJSON]{
	field[childJSON]{key: "pid", val: func(c *childJSON) any { return &c.PID }},
	field[childJSON]{key: "start", val: func(c *childJSON) any { return &c.Start }},
}

// extraFieldNames are the keys MarshalJSON adds to the stored ones (a
// database store's lease and late result).
var extraFieldNames = []string{"lease_until", "late.status", "late.exit_code", "late.error", "late.finished_at"}

// fieldNames lists every name --field takes, for its error message.
func fieldNames() string {
	var names []string
	for _, f := range recordFields {
		names = append(names, f.key)
		switch f.key {
		case "owner":
			for _, o := range ownerFields {
				names = append(names, "owner."+o.key)
			}
		case "child":
			for _, c := range childFields {
				names = append(names, "child."+c.key)
			}
		}
	}
	return strings.Join(append(names, extraFieldNames...), ", ")
}

// appendKey appends sep, then key as a JSON object's key: ,"key":
func appendKey(b []byte, sep byte, key string) []byte {
	b = append(b, sep, '"')
	b = append(b, key...)
	return append(b, '"', ':')
}

// appendFields appends the fields of v, as json.Marshal writes them (the
// opening brace only if brace; the closing one always); ok turns false
// for a string that is not plain.
func appendFields[T any](b []byte, ok *bool, fs []field[T], v *T, brace bool) []byte {
	for i, f := range fs {
		sep := byte(',')
		if i == 0 && brace {
			sep = '{'
		}
		b = appendKey(b, sep, f.key)
		b = appendValue(b, ok, f.val(v))
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
	case *Status:
		return str(string(*p))
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
	case **ownerJSON:
		if *p == nil {
			return append(b, "null"...)
		}
		return appendFields(b, ok, ownerFields, *p, true)
	case **childJSON:
		if *p == nil {
			return append(b, "null"...)
		}
		return appendFields(b, ok, childFields, *p, true)
	}
	panic("ledger: a record field of an unknown kind")
}

// readFields reads the fields of v in table order (after the opening
// brace if brace is not set), and the closing brace.
func readFields[T any](r *canonicalReader, fs []field[T], v *T, brace bool) {
	for i, f := range fs {
		sep := byte(',')
		if i == 0 && brace {
			sep = '{'
		}
		if f.optional {
			if !r.hasKey(sep, f.key) {
				continue
			}
		} else if !r.hasKey(sep, f.key) {
			r.ok = false
		}
		readValue(r, f.val(v))
	}
	r.lit("}")
}

func readValue(r *canonicalReader, v any) {
	switch p := v.(type) {
	case *string:
		*p = r.str()
	case **string:
		*p = r.strp()
	case *Status:
		*p = Status(r.str())
	case *bool:
		if r.has("true") {
			*p = true
		} else {
			r.lit("false")
		}
	case *int:
		*p = r.int()
	case **int:
		if !r.null() {
			n := r.int()
			*p = &n
		}
	case **uint64:
		*p = r.u64p()
	case **ownerJSON:
		if !r.null() {
			o := &ownerJSON{}
			readFields(r, ownerFields, o, true)
			*p = o
		}
	case **childJSON:
		if !r.null() {
			c := &childJSON{}
			readFields(r, childFields, c, true)
			*p = c
		}
	default:
		panic("ledger: a record field of an unknown kind")
	}
}

// fieldText is a value of the JSON form as --field prints it: empty when
// null.
func fieldText(v any) string {
	switch p := v.(type) {
	case *string:
		return *p
	case **string:
		if *p == nil {
			return ""
		}
		return **p
	case *Status:
		return string(*p)
	case *bool:
		return strconv.FormatBool(*p)
	case *int:
		return strconv.Itoa(*p)
	case **int:
		if *p == nil {
			return ""
		}
		return strconv.Itoa(**p)
	case **uint64:
		if *p == nil {
			return ""
		}
		return strconv.FormatUint(**p, 10)
	}
	return ""
}

// lookup returns the value of key in v's fields.
func lookup[T any](fs []field[T], v *T, key string) (any, bool) {
	for _, f := range fs {
		if f.key == key {
			return f.val(v), true
		}
	}
	return nil, false
}

// storedField is Field for the keys of the stored form.
func storedField(j *recordJSON, name string) (string, bool) {
	top, sub, nested := strings.Cut(name, ".")
	v, ok := lookup(recordFields, j, top)
	if !ok {
		return "", false
	}
	if !nested {
		return fieldText(v), true
	}
	switch p := v.(type) {
	case **ownerJSON:
		if *p == nil {
			_, ok := lookup(ownerFields, &ownerJSON{}, sub)
			return "", ok
		}
		v, ok = lookup(ownerFields, *p, sub)
	case **childJSON:
		if *p == nil {
			_, ok := lookup(childFields, &childJSON{}, sub)
			return "", ok
		}
		v, ok = lookup(childFields, *p, sub)
	default:
		return "", false
	}
	if !ok {
		return "", false
	}
	return fieldText(v), true
}
