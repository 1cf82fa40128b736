package wire

import (
	"strconv"

	"github.com/tether-sh/tether/lib/internal/shortcut"
	"github.com/tether-sh/tether/lib/ledger/internal/form"
)

// Every ledger call reads a record and most write one, in a process that
// lives a few milliseconds: encoding/json's reflection (building its type
// caches, growing the stack) was a share of a transition's CPU that
// lib/internal/shortcut's register measures. Records are written in one
// canonical form (lib/ledger/internal/form's AppendCanonical) and read
// back here directly when every string in them is plain printable ASCII
// (ids, jobs, times and hosts always are). Anything else (escapes, other
// text, another key order, the --json form, a damaged file) goes through
// encoding/json. FuzzCanonicalDecode and FuzzCanonicalEncode require both
// ways to agree on what this accepts.

// canonicalReader reads the canonical form; ok turns false at the first
// byte that does not fit it.
type canonicalReader struct {
	b  []byte
	ok bool
}

func (r *canonicalReader) lit(s string) {
	if r.ok && len(r.b) >= len(s) && string(r.b[:len(s)]) == s {
		r.b = r.b[len(s):]
		return
	}
	r.ok = false
}

// null consumes "null" if it comes next.
func (r *canonicalReader) null() bool {
	if r.ok && len(r.b) >= 4 && string(r.b[:4]) == "null" {
		r.b = r.b[4:]
		return true
	}
	return false
}

func (r *canonicalReader) str() string {
	r.lit(`"`)
	if !r.ok {
		return ""
	}
	for i, c := range r.b {
		if c == '"' {
			s := string(r.b[:i])
			r.b = r.b[i+1:]
			return s
		}
		if c < 0x20 || c > 0x7e || c == '\\' || c == '<' || c == '>' || c == '&' {
			break
		}
	}
	r.ok = false
	return ""
}

func (r *canonicalReader) strp() *string {
	if r.null() {
		return nil
	}
	s := r.str()
	return &s
}

// digits returns the JSON integer that comes next: -?(0|[1-9][0-9]*).
// Its bytes are r's.
func (r *canonicalReader) digits(signed bool) []byte {
	n := 0
	if signed && len(r.b) > 0 && r.b[0] == '-' {
		n++
	}
	start := n
	for n < len(r.b) && r.b[n] >= '0' && r.b[n] <= '9' {
		n++
	}
	if !r.ok || n == start || (r.b[start] == '0' && n > start+1) {
		r.ok = false
		return nil
	}
	d := r.b[:n]
	r.b = r.b[n:]
	return d
}

func (r *canonicalReader) int() int {
	n, err := strconv.ParseInt(string(r.digits(true)), 10, strconv.IntSize)
	if err != nil {
		r.ok = false
	}
	return int(n)
}

func (r *canonicalReader) u64p() *uint64 {
	if r.null() {
		return nil
	}
	n, err := strconv.ParseUint(string(r.digits(false)), 10, 64)
	if err != nil {
		r.ok = false
	}
	return &n
}

// hasKey consumes sep, then key as a JSON object's key (,"key":) if
// they come next.
func (r *canonicalReader) hasKey(sep byte, key string) bool {
	n := len(key) + 4
	if !r.ok || len(r.b) < n || r.b[0] != sep || r.b[1] != '"' || string(r.b[2:n-2]) != key || r.b[n-2] != '"' || r.b[n-1] != ':' {
		return false
	}
	r.b = r.b[n:]
	return true
}

// has consumes s if it comes next.
func (r *canonicalReader) has(s string) bool {
	if r.ok && len(r.b) >= len(s) && string(r.b[:len(s)]) == s {
		r.b = r.b[len(s):]
		return true
	}
	return false
}

// readCanonical parses b if it is exactly a canonical on-disk record (with
// "v", and one trailing newline or none) into what encoding/json would
// decode from it; ok is false otherwise. The keys come from form.Fields.
func readCanonical(b []byte) (j form.Record, ok bool) {
	shortcut.Ran(shortcut.CanonicalCodec)
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	r := &canonicalReader{b: b, ok: true}
	r.lit(`{"v":`)
	j.V = r.int()
	if !r.hasKey(',', form.Fields[0].Key) {
		r.ok = false
	}
	readValue(r, form.Fields[0].Val(&j))
	readFields(r, form.Fields[1:], &j, false)
	if !r.ok || len(r.b) != 0 {
		return form.Record{}, false
	}
	return j, true
}

// readFields reads the fields of v in table order (after the opening
// brace if brace is not set), and the closing brace.
func readFields[T any](r *canonicalReader, fs []form.Field[T], v *T, brace bool) {
	for i, f := range fs {
		sep := byte(',')
		if i == 0 && brace {
			sep = '{'
		}
		if f.Optional {
			if !r.hasKey(sep, f.Key) {
				continue
			}
		} else if !r.hasKey(sep, f.Key) {
			r.ok = false
		}
		readValue(r, f.Val(v))
	}
	r.lit("}")
}

func readValue(r *canonicalReader, v any) {
	switch p := v.(type) {
	case *string:
		*p = r.str()
	case **string:
		*p = r.strp()
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
	case **form.Owner:
		if !r.null() {
			o := &form.Owner{}
			readFields(r, form.OwnerFields, o, true)
			*p = o
		}
	case **form.Child:
		if !r.null() {
			c := &form.Child{}
			readFields(r, form.ChildFields, c, true)
			*p = c
		}
	default:
		panic("wire: a record field of an unknown kind")
	}
}
