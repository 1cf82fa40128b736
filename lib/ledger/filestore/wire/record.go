package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/tether-sh/tether/lib/internal/shortcut"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/internal/form"
	"github.com/tether-sh/tether/lib/proc"
)

// recordFormat is the stored form's version ("v").
const recordFormat = 1

// Encode returns the stored form of r (what Decode reads back): the
// payload of a claim frame in the file store's job logs, one line of
// canonical JSON.
func Encode(r ledger.Record) []byte {
	j := r.Form()
	j.V = recordFormat
	if shortcut.Take(shortcut.CanonicalCodec) {
		if b, ok := form.AppendCanonical(make([]byte, 0, 512), &j); ok {
			return append(b, '\n')
		}
	}
	b, err := json.Marshal(j)
	if err != nil {
		// Only strings, ints and bools: Marshal cannot fail.
		panic("wire: encoding a record: " + err.Error())
	}
	return append(b, '\n')
}

// parseForm reads the JSON of one record: the canonical form directly,
// anything else with encoding/json.
func parseForm(b []byte) (form.Record, error) {
	if shortcut.Take(shortcut.CanonicalCodec) {
		if j, ok := readCanonical(b); ok {
			return j, nil
		}
	}
	var j form.Record
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&j); err != nil {
		return form.Record{}, fmt.Errorf("%w: %v", ledger.ErrCorrupt, err)
	}
	if dec.More() {
		return form.Record{}, fmt.Errorf("%w: trailing data after the record", ledger.ErrCorrupt)
	}
	return j, nil
}

// Decode parses and validates one record as stored (or as printed by
// --json). If id is not empty the record must carry that id. A record that
// does not parse, or whose fields are not a legal state, is
// ledger.ErrCorrupt.
func Decode(b []byte, id string) (ledger.Record, error) {
	if len(b) > ledger.MaxRecordSize {
		return ledger.Record{}, fmt.Errorf("%w: record larger than %d bytes", ledger.ErrCorrupt, ledger.MaxRecordSize)
	}
	j, err := parseForm(b)
	if err != nil {
		return ledger.Record{}, err
	}
	return fromForm(j, id)
}

// fromForm checks and converts the form of one record (Decode's second
// half, shared with ApplyDelta): the way back from ledger.Record.Form.
func fromForm(j form.Record, id string) (ledger.Record, error) {
	if j.V != 0 && j.V != recordFormat {
		return ledger.Record{}, fmt.Errorf("%w: record format %d is not %d", ledger.ErrCorrupt, j.V, recordFormat)
	}
	var r ledger.Record
	t := formTimes{}
	fromFormFields(&r, &j, &t)
	if t.err != nil {
		return ledger.Record{}, t.err
	}
	if j.Owner != nil {
		r.Owner = ledger.Owner{Host: str(j.Owner.Host), BootID: str(j.Owner.BootID), PIDNS: u64(j.Owner.PIDNS), PID: j.Owner.PID, Start: u64(j.Owner.Start)}
	}
	if j.Child != nil {
		r.Child = proc.ID{PID: j.Child.PID, Start: u64(j.Child.Start)}
	}
	if err := r.Validate(); err != nil {
		return ledger.Record{}, err
	}
	if id != "" && r.ID != id {
		return ledger.Record{}, fmt.Errorf("%w: record carries id %q", ledger.ErrCorrupt, r.ID)
	}
	return r, nil
}

// The way back from the form's nullable values (fromform_gen.go): null
// is the zero value.

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func count(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

func u64(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

// formTimes parses the times of a form, RFC 3339 and not the zero time,
// keeping the first error.
type formTimes struct {
	err error
}

func (t *formTimes) at(name string, p *string) time.Time {
	if p == nil || t.err != nil {
		return time.Time{}
	}
	v, err := time.Parse(time.RFC3339Nano, *p)
	if err != nil {
		t.err = fmt.Errorf("%w: %s %q is not an RFC 3339 time", ledger.ErrCorrupt, name, *p)
		return time.Time{}
	}
	if v.IsZero() {
		t.err = fmt.Errorf("%w: %s is the zero time", ledger.ErrCorrupt, name)
	}
	return v.UTC()
}
