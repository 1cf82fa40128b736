package wire

import (
	"time"

	"github.com/tether-sh/tether/lib/internal/shortcut"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/internal/form"
	"github.com/tether-sh/tether/lib/proc"
)

// Listing a store of appended versions prints each execution as its claim
// (Encode's bytes) with its newest delta (EncodeDelta's) applied. Through
// Record that is a decode of both, every time parsed, then every time
// formatted back for MarshalJSON: most of `ledger list --json`'s CPU
// (lib/internal/shortcut's register). AppendStoredJSON does the same from
// the bytes when they are in the form MarshalJSON writes back unchanged,
// as the canonical codec writes them (form.AppendCanonical): values are
// copied, and only what Validate looks at is built; StoredFate reads so what a prune decides by. FuzzStoredJSON
// requires both to agree with the general path.

// AppendStoredJSON appends to dst the object MarshalJSON prints for the
// record of execution id stored as claim (Encode's form) with delta
// (EncodeDelta's form against it, nil for none) applied, in a store that
// keeps neither lease_until nor late, and returns its status. ok is false
// when it cannot vouch for the bytes: a value in another form than the
// canonical codec writes, a record Validate refuses, or the shortcut
// (stored-bytes) off. The caller then decodes the record (Decode,
// ApplyDelta), which says what is wrong with it.
func AppendStoredJSON(dst, claim, delta []byte, id string) (b []byte, st ledger.Status, ok bool) {
	var s stored
	if !s.read(claim, delta, id) {
		return dst, "", false
	}
	b = dst
	for i, f := range form.Fields {
		sep := byte(',')
		if i == 0 {
			sep = '{'
		}
		b = form.AppendKey(b, sep, f.Key)
		if v := s.value(i); v != nil {
			b = append(b, v...)
		} else {
			b = append(b, "null"...)
		}
	}
	return append(b, `,"lease_until":null,"late":null}`...), s.rec.Status, true
}

// StoredFate reads from a stored claim and delta, as AppendStoredJSON
// does, what a prune decides by: the status, when it finished and its
// instant (zero when null). ok is false as AppendStoredJSON's.
func StoredFate(claim, delta []byte, id string) (st ledger.Status, finished, instant time.Time, ok bool) {
	var s stored
	if !s.read(claim, delta, id) {
		return "", time.Time{}, time.Time{}, false
	}
	for i, f := range form.Fields {
		if v := s.value(i); f.Key == "finished_at" && v != nil && string(v) != "null" {
			t, err := time.Parse(time.RFC3339Nano, string(v[1:len(v)-1]))
			if err != nil {
				return "", time.Time{}, time.Time{}, false
			}
			finished = t
		}
	}
	return s.rec.Status, finished, s.rec.Instant, true
}

// stored is a claim and its delta, read from their bytes.
type stored struct {
	claim, delta storedSpans
	// rec is what Validate reads of the version: every time only set or
	// not, but the instant, whose range it checks.
	rec ledger.Record
}

// read reads claim and delta of execution id, and checks them as
// Decode and ApplyDelta would: false when it cannot vouch for them (see
// AppendStoredJSON).
func (s *stored) read(claim, delta []byte, id string) bool {
	if !shortcut.Take(shortcut.StoredBytes) {
		return false
	}
	shortcut.Ran(shortcut.StoredBytes)
	if n := len(claim); n > 0 && claim[n-1] == '\n' {
		claim = claim[:n-1]
	}
	if len(claim) > ledger.MaxRecordSize || len(delta) > ledger.MaxRecordSize {
		return false
	}
	r := &canonicalReader{b: claim, ok: true}
	r.lit(`{"v":1`)
	s.claim.read(r, ',', false)
	if v := s.claim.v[0]; !r.ok || len(r.b) != 0 || len(v) != len(id)+2 || string(v[1:len(id)+1]) != id {
		return false
	}
	// The claim alone is a legal record, as Decode requires, and so is
	// the version the delta makes of it, as ApplyDelta does.
	s.rec = ledger.Record{ID: id}
	if !s.claim.fill(&s.rec) || s.rec.Validate() != nil {
		return false
	}
	if delta != nil {
		r = &canonicalReader{b: delta, ok: true}
		s.delta.read(r, '{', true)
		if !r.ok || len(r.b) != 0 || !s.delta.fill(&s.rec) || s.rec.Validate() != nil {
			return false
		}
	}
	return true
}

// value returns the bytes of field i's value in the version: the
// delta's, else the claim's; nil when neither has the key.
func (s *stored) value(i int) []byte {
	if v := s.delta.v[i]; v != nil {
		return v
	}
	return s.claim.v[i]
}

// spanKinds is what the tables' val point into to tell span a field's
// kind: never written.
var spanKinds struct {
	record form.Record
	owner  form.Owner
	child  form.Child
}

// storedSpans holds, per key of form.Fields, the bytes of its value (nil:
// absent, an optional key of an older record, which MarshalJSON prints as
// null).
type storedSpans struct {
	v [storedKeys][]byte
}

// read reads the object's keys in table order (the id only in a claim:
// a delta never sets it) up to its closing brace, each value checked by
// span, and keeps their bytes. A claim's keys are all there but the
// optional ones; a delta's are any of them, "{}" when none.
func (sp *storedSpans) read(r *canonicalReader, sep byte, delta bool) {
	if len(form.Fields) > len(sp.v) {
		r.ok = false
		return
	}
	for i, f := range form.Fields {
		if delta && i == 0 {
			continue
		}
		if !r.hasKey(sep, f.Key) {
			if !delta && !f.Optional {
				r.ok = false
				return
			}
			continue
		}
		sep = ','
		start := r.b
		span(r, f.Val(&spanKinds.record), f.Time)
		if !r.ok {
			return
		}
		sp.v[i] = start[:len(start)-len(r.b)]
	}
	if sep == '{' {
		r.lit("{")
	}
	r.lit("}")
}

// span consumes one value of the kind v points at (as readValue takes it)
// when MarshalJSON would write it back byte for byte: a plain string
// (non-empty where empty reads as null), a canonical time, an integer
// that fits, a non-zero uint64, an owner or child with every key and a
// PID. Anything else turns r.ok false.
func span(r *canonicalReader, v any, isTime bool) {
	switch v.(type) {
	case *string:
		spanString(r, false)
	case **string:
		if r.null() {
			return
		}
		if s := spanString(r, true); isTime && !canonicalTime(s) {
			r.ok = false
		}
	case *bool:
		if !r.has("true") {
			r.lit("false")
		}
	case *int:
		spanInt(r, 9)
	case **int:
		if !r.null() {
			spanInt(r, 9)
		}
	case **uint64:
		if !r.null() && spanInt(r, 18) <= 0 {
			r.ok = false
		}
	case **form.Owner:
		if !r.null() {
			spanObject(r, form.OwnerFields, &spanKinds.owner)
		}
	case **form.Child:
		if !r.null() {
			spanObject(r, form.ChildFields, &spanKinds.child)
		}
	default:
		r.ok = false
	}
}

// spanObject consumes an owner or child object with every key of fs.
func spanObject[T any](r *canonicalReader, fs []form.Field[T], kinds *T) {
	for i, f := range fs {
		sep := byte(',')
		if i == 0 {
			sep = '{'
		}
		if !r.hasKey(sep, f.Key) {
			r.ok = false
			return
		}
		span(r, f.Val(kinds), false)
	}
	r.lit("}")
}

// spanString consumes a plain string (non-empty if nonEmpty) and returns
// its bytes between the quotes.
func spanString(r *canonicalReader, nonEmpty bool) []byte {
	r.lit(`"`)
	if !r.ok {
		return nil
	}
	for i, c := range r.b {
		if plainBytes[c>>6]&(1<<(c&63)) != 0 {
			continue
		}
		if c == '"' {
			s := r.b[:i]
			r.b = r.b[i+1:]
			if nonEmpty && i == 0 {
				r.ok = false
			}
			return s
		}
		break
	}
	r.ok = false
	return nil
}

// plainBytes is the set of bytes plain takes, a bit per byte: printable
// ASCII (0x20 to 0x7e) but '"', '&', '<', '>' and '\\'.
var plainBytes = [4]uint64{
	0xffffffff00000000 &^ (1<<('"'-0) | 1<<('&'-0) | 1<<('<'-0) | 1<<('>'-0)),
	0x7fffffffffffffff &^ (1 << ('\\' - 64)),
}

// spanInt consumes an integer of at most max digits (9 fits any int, 18
// any int64) and returns it; "-0", which reads back as 0, is refused.
func spanInt(r *canonicalReader, max int) int64 {
	d := r.digits(true)
	neg := r.ok && d[0] == '-'
	if neg {
		d = d[1:]
	}
	if !r.ok || len(d) > max || (neg && string(d) == "0") {
		r.ok = false
		return 0
	}
	n := int64(0)
	for i := 0; i < len(d); i++ {
		n = n*10 + int64(d[i]-'0')
	}
	if neg {
		return -n
	}
	return n
}

// fill (storedfill_gen.go, generated from form.Fields by
// TestGeneratedUpToDate) sets in r, from each value the spans hold, what
// Validate reads of it (null: the zero value), each key into the Record
// field its table row names: every time it only asks whether it is set,
// but the ones it checks the range of (ranged: the instant). It is false
// for what MarshalJSON would not write back as it is. Generated, not
// derived at run time, so that r stays the caller's (no closure, no
// interface): list --json reads 100,000 records through it.
//go:generate go test . -run TestGeneratedUpToDate -update

// spanText is a string value's text (null: empty).
func spanText(v []byte) string {
	if string(v) == "null" {
		return ""
	}
	return string(v[1 : len(v)-1])
}

// fillTime sets *t from a time value: zero for null, parsed when ranged,
// else any time that is set (all Validate asks of it).
func fillTime(t *time.Time, v []byte, ranged bool) bool {
	switch {
	case string(v) == "null":
		*t = time.Time{}
	case ranged:
		p, err := time.Parse(time.RFC3339Nano, string(v[1:len(v)-1]))
		if err != nil {
			return false
		}
		*t = p
	default:
		*t = time.Unix(1, 0)
	}
	return true
}

// fillU64 sets *p from a non-negative integer value (null: 0).
func fillU64(p *uint64, v []byte) {
	*p = 0
	if string(v) != "null" {
		*p = uint64(spanInt(&canonicalReader{b: v, ok: true}, 18))
	}
}

// fillInt sets *p from an integer value (null: nil).
func fillInt(p **int, v []byte) {
	*p = nil
	if string(v) != "null" {
		c := int(spanInt(&canonicalReader{b: v, ok: true}, 9))
		*p = &c
	}
}

// fillCount sets *p from a count's value (null: 0); false for a value
// MarshalJSON writes as null (0) or Validate refuses (negative), so that
// the general path reads it.
func fillCount(p *int, v []byte) bool {
	*p = 0
	if string(v) == "null" {
		return true
	}
	*p = int(spanInt(&canonicalReader{b: v, ok: true}, 9))
	return *p > 0
}

// fillOwner sets *o from an owner value; false for one of PID 0, which
// MarshalJSON writes as null.
func fillOwner(o *ledger.Owner, v []byte) bool {
	*o = ledger.Owner{}
	if string(v) != "null" {
		if *o = storedOwner(v, form.OwnerFields); o.PID == 0 {
			return false
		}
	}
	return true
}

// fillChild is fillOwner for the child.
func fillChild(c *proc.ID, v []byte) bool {
	*c = proc.ID{}
	if string(v) != "null" {
		o := storedOwner(v, form.ChildFields)
		if *c = (proc.ID{PID: o.PID, Start: o.Start}); o.PID == 0 {
			return false
		}
	}
	return true
}

// storedOwner reads from an owner's or child's span, which span
// checked, what Validate looks at.
func storedOwner[T any](v []byte, fs []form.Field[T]) (o ledger.Owner) {
	r := &canonicalReader{b: v, ok: true}
	for i, f := range fs {
		sep := byte(',')
		if i == 0 {
			sep = '{'
		}
		if !r.hasKey(sep, f.Key) || r.null() {
			continue
		}
		switch f.Key {
		case "host":
			o.Host = string(spanString(r, false))
		case "boot_id":
			o.BootID = string(spanString(r, false))
		case "pid":
			o.PID = int(spanInt(r, 9))
		case "pidns":
			o.PIDNS = uint64(spanInt(r, 18))
		case "start":
			o.Start = uint64(spanInt(r, 18))
		}
	}
	return o
}

// daysIn is the length of each month of a year that is not leap.
var daysIn = [12]byte{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

// canonicalTime reports whether s is a time as FormatTime writes it
// (RFC 3339 in UTC, the fraction without trailing zeros), a valid date
// and not the zero time: what reads back and formats as itself.
func canonicalTime(s []byte) bool {
	// 2006-01-02T15:04:05[.999999999]Z
	if len(s) < 20 || s[len(s)-1] != 'Z' || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return false
	}
	num := func(i, n int) int {
		v := 0
		for _, c := range s[i : i+n] {
			if c < '0' || c > '9' {
				return -1
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	year, month, day := num(0, 4), num(5, 2), num(8, 2)
	hour, minute, sec := num(11, 2), num(14, 2), num(17, 2)
	if year < 0 || month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 || minute < 0 || minute > 59 || sec < 0 || sec > 59 {
		return false
	}
	leap := year%4 == 0 && (year%100 != 0 || year%400 == 0)
	if day > int(daysIn[month-1]) && !(month == 2 && day == 29 && leap) {
		return false
	}
	if frac := s[19 : len(s)-1]; len(frac) > 0 {
		if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 || frac[len(frac)-1] == '0' || num(20, len(frac)-1) < 0 {
			return false
		}
	}
	return string(s) != "0001-01-01T00:00:00Z"
}
