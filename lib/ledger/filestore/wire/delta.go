package wire

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/tether-sh/tether/lib/internal/shortcut"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/internal/form"
)

// A delta is a later version of a record written as the keys of its
// stored form whose values differ from an earlier version's: what a store
// that appends versions (the file store's job logs) writes for a
// transition, a fraction of the whole record (bench/README.md). Both
// sides come from the field table (form.Fields): a key added there is
// carried by deltas with no change here.

// EncodeDelta returns r as a delta against base, a version of the same
// execution: a JSON object holding, in table order, each key whose value
// in r's stored form differs from base's ({} when none does).
func EncodeDelta(r, base ledger.Record) []byte {
	jr, jb := r.Form(), base.Form()
	b := make([]byte, 0, 160)
	sep := byte('{')
	for _, f := range form.Fields {
		v := form.ValueJSON(f.Val(&jr))
		if bytes.Equal(v, form.ValueJSON(f.Val(&jb))) {
			continue
		}
		b = form.AppendKey(b, sep, f.Key)
		b = append(b, v...)
		sep = ','
	}
	if sep == '{' {
		b = append(b, '{')
	}
	return append(b, '}')
}

// ApplyDelta returns base with the keys of delta (EncodeDelta's form) set
// to delta's values, checked as Decode checks a record: a delta that is
// not such an object, names a key the stored form lacks or the id, or
// makes an illegal record is ledger.ErrCorrupt.
func ApplyDelta(base ledger.Record, delta []byte) (ledger.Record, error) {
	if shortcut.Take(shortcut.CanonicalCodec) {
		j := base.Form()
		if readDeltaCanonical(delta, &j) {
			return fromForm(j, base.ID)
		}
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(delta, &keys); err != nil {
		return ledger.Record{}, fmt.Errorf("%w: delta: %v", ledger.ErrCorrupt, err)
	}
	j := base.Form()
	for k, v := range keys {
		p, ok := form.Lookup(form.Fields, &j, k)
		if !ok || k == "id" {
			return ledger.Record{}, fmt.Errorf("%w: delta sets %q", ledger.ErrCorrupt, k)
		}
		resetField(p)
		if err := json.Unmarshal(v, p); err != nil {
			return ledger.Record{}, fmt.Errorf("%w: delta: %s: %v", ledger.ErrCorrupt, k, err)
		}
	}
	return fromForm(j, base.ID)
}

// resetField clears the field p points at, so that decoding into it
// replaces a nested object instead of merging into it.
func resetField(p any) {
	switch q := p.(type) {
	case **form.Owner:
		*q = nil
	case **form.Child:
		*q = nil
	}
}

// readDeltaCanonical sets in j the keys of delta when it is exactly
// EncodeDelta's canonical form (keys in table order, no id); false
// otherwise, j then half set.
func readDeltaCanonical(delta []byte, j *form.Record) bool {
	shortcut.Ran(shortcut.CanonicalCodec)
	r := &canonicalReader{b: delta, ok: true}
	sep := byte('{')
	for _, f := range form.Fields[1:] {
		if !r.hasKey(sep, f.Key) {
			continue
		}
		sep = ','
		v := f.Val(j)
		resetField(v)
		readValue(r, v)
	}
	if sep == '{' {
		r.lit("{")
	}
	r.lit("}")
	return r.ok && len(r.b) == 0
}
