package ledger

import (
	"strconv"

	"github.com/tether-sh/tether/lib/internal/shortcut"
)

// Every ledger call reads a record and most write one, in a process that
// lives a few milliseconds: encoding/json's reflection (building its type
// caches, growing the stack) was a tenth of a transition's CPU. Records
// are written in one canonical form — the bytes json.Marshal writes for
// recordJSON, keys in field order, no spaces — so they are encoded and
// read back here directly when every string in them is plain printable
// ASCII (ids, jobs, times and hosts always are). Anything else (escapes,
// other text, another key order, the --json form, a damaged file) goes
// through encoding/json. FuzzCanonicalDecode and
// FuzzCanonicalEncode require both ways to agree on what this accepts.

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

// appendCanonical appends json.Marshal(j) to b, or reports false if a
// string in j is not plain.
func appendCanonical(b []byte, j *recordJSON) ([]byte, bool) {
	shortcut.Ran(shortcut.CanonicalCodec)
	ok := true
	str := func(key, s string) {
		b = append(b, key...)
		if !plain(s) {
			ok = false
		}
		b = append(b, '"')
		b = append(b, s...)
		b = append(b, '"')
	}
	strp := func(key string, p *string) {
		if p == nil {
			b = append(b, key...)
			b = append(b, "null"...)
			return
		}
		str(key, *p)
	}
	u64p := func(key string, p *uint64) {
		b = append(b, key...)
		if p == nil {
			b = append(b, "null"...)
			return
		}
		b = strconv.AppendUint(b, *p, 10)
	}
	b = append(b, '{')
	if j.V != 0 {
		b = append(b, `"v":`...)
		b = strconv.AppendInt(b, int64(j.V), 10)
		b = append(b, ',')
	}
	str(`"id":`, j.ID)
	str(`,"job":`, j.Job)
	strp(`,"source":`, j.Source)
	strp(`,"instant":`, j.Instant)
	str(`,"status":`, string(j.Status))
	b = append(b, `,"fenced":`...)
	b = strconv.AppendBool(b, j.Fenced)
	strp(`,"fenced_at":`, j.FencedAt)
	b = append(b, `,"owner":`...)
	if o := j.Owner; o == nil {
		b = append(b, "null"...)
	} else {
		strp(`{"host":`, o.Host)
		strp(`,"boot_id":`, o.BootID)
		u64p(`,"pidns":`, o.PIDNS)
		b = append(b, `,"pid":`...)
		b = strconv.AppendInt(b, int64(o.PID), 10)
		u64p(`,"start":`, o.Start)
		b = append(b, '}')
	}
	b = append(b, `,"child":`...)
	if c := j.Child; c == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"pid":`...)
		b = strconv.AppendInt(b, int64(c.PID), 10)
		u64p(`,"start":`, c.Start)
		b = append(b, '}')
	}
	strp(`,"claimed_at":`, j.ClaimedAt)
	strp(`,"started_at":`, j.StartedAt)
	strp(`,"finished_at":`, j.FinishedAt)
	b = append(b, `,"exit_code":`...)
	if j.ExitCode == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, int64(*j.ExitCode), 10)
	}
	strp(`,"error":`, j.Error)
	strp(`,"beat_at":`, j.BeatAt)
	strp(`,"note":`, j.Note)
	b = append(b, '}')
	return b, ok
}

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
func (r *canonicalReader) digits(signed bool) string {
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
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *canonicalReader) int() int {
	n, err := strconv.ParseInt(r.digits(true), 10, strconv.IntSize)
	if err != nil {
		r.ok = false
	}
	return int(n)
}

func (r *canonicalReader) u64p() *uint64 {
	if r.null() {
		return nil
	}
	n, err := strconv.ParseUint(r.digits(false), 10, 64)
	if err != nil {
		r.ok = false
	}
	return &n
}

// readCanonical parses b if it is exactly a canonical on-disk record (with
// "v", and one trailing newline or none) into what encoding/json would
// decode from it; ok is false otherwise.
func readCanonical(b []byte) (j recordJSON, ok bool) {
	shortcut.Ran(shortcut.CanonicalCodec)
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	r := &canonicalReader{b: b, ok: true}
	r.lit(`{"v":`)
	j.V = r.int()
	r.lit(`,"id":`)
	j.ID = r.str()
	r.lit(`,"job":`)
	j.Job = r.str()
	r.lit(`,"source":`)
	j.Source = r.strp()
	r.lit(`,"instant":`)
	j.Instant = r.strp()
	r.lit(`,"status":`)
	j.Status = Status(r.str())
	r.lit(`,"fenced":`)
	switch {
	case r.ok && len(r.b) >= 4 && string(r.b[:4]) == "true":
		j.Fenced = true
		r.b = r.b[4:]
	default:
		r.lit("false")
	}
	r.lit(`,"fenced_at":`)
	j.FencedAt = r.strp()
	r.lit(`,"owner":`)
	if !r.null() {
		o := &ownerJSON{}
		r.lit(`{"host":`)
		o.Host = r.strp()
		r.lit(`,"boot_id":`)
		o.BootID = r.strp()
		// Records written before PID namespaces were recorded have no
		// "pidns": encoding/json leaves it nil, and so does this.
		if r.ok && len(r.b) >= 9 && string(r.b[:9]) == `,"pidns":` {
			r.b = r.b[9:]
			o.PIDNS = r.u64p()
		}
		r.lit(`,"pid":`)
		o.PID = r.int()
		r.lit(`,"start":`)
		o.Start = r.u64p()
		r.lit(`}`)
		j.Owner = o
	}
	r.lit(`,"child":`)
	if !r.null() {
		c := &childJSON{}
		r.lit(`{"pid":`)
		c.PID = r.int()
		r.lit(`,"start":`)
		c.Start = r.u64p()
		r.lit(`}`)
		j.Child = c
	}
	r.lit(`,"claimed_at":`)
	j.ClaimedAt = r.strp()
	r.lit(`,"started_at":`)
	j.StartedAt = r.strp()
	r.lit(`,"finished_at":`)
	j.FinishedAt = r.strp()
	r.lit(`,"exit_code":`)
	if !r.null() {
		n := r.int()
		j.ExitCode = &n
	}
	r.lit(`,"error":`)
	j.Error = r.strp()
	// Records written before beats have neither "beat_at" nor "note":
	// encoding/json leaves them nil, and so does this.
	if r.ok && len(r.b) >= 11 && string(r.b[:11]) == `,"beat_at":` {
		r.b = r.b[11:]
		j.BeatAt = r.strp()
		r.lit(`,"note":`)
		j.Note = r.strp()
	}
	r.lit(`}`)
	if !r.ok || len(r.b) != 0 {
		return recordJSON{}, false
	}
	return j, true
}
