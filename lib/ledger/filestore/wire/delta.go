package ledger

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/tether-sh/tether/lib/internal/shortcut"
)

// A delta is a later version of a record written as the keys of its
// stored form whose values differ from an earlier version's: what a store
// that appends versions (the file store's job logs) writes for a
// transition, a fraction of the whole record (bench/README.md). Both
// sides come from the field table (recordFields): a key added there is
// carried by deltas with no change here.

// EncodeDelta returns r as a delta against base, a version of the same
// execution: a JSON object holding, in table order, each key whose value
// in r's stored form differs from base's ({} when none does).
func (r Record) EncodeDelta(base Record) []byte {
	jr, jb := r.toJSON(), base.toJSON()
	b := make([]byte, 0, 160)
	sep := byte('{')
	for _, f := range recordFields {
		v := fieldJSON(f.val(&jr))
		if bytes.Equal(v, fieldJSON(f.val(&jb))) {
			continue
		}
		b = appendKey(b, sep, f.key)
		b = append(b, v...)
		sep = ','
	}
	if sep == '{' {
		b = append(b, '{')
	}
	return append(b, '}')
}

// fieldJSON is one value of the stored form as encoding/json writes it:
// the canonical writer's bytes when every string in it is plain.
func fieldJSON(v any) []byte {
	ok := true
	b := appendValue(nil, &ok, v)
	if ok {
		return b
	}
	b, err := json.Marshal(v)
	if err != nil {
		// Only strings, ints and bools: Marshal cannot fail.
		panic("ledger: encoding a record field: " + err.Error())
	}
	return b
}

// ApplyDelta returns base with the keys of delta (EncodeDelta's form) set
// to delta's values, checked as Decode checks a record: a delta that is
// not such an object, names a key the stored form lacks or the id, or
// makes an illegal record is ErrCorrupt.
func ApplyDelta(base Record, delta []byte) (Record, error) {
	if shortcut.Take(shortcut.CanonicalCodec) {
		j := base.toJSON()
		if readDeltaCanonical(delta, &j) {
			return fromJSON(j, base.ID)
		}
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(delta, &keys); err != nil {
		return Record{}, fmt.Errorf("%w: delta: %v", ErrCorrupt, err)
	}
	j := base.toJSON()
	for k, v := range keys {
		p, ok := lookup(recordFields, &j, k)
		if !ok || k == "id" {
			return Record{}, fmt.Errorf("%w: delta sets %q", ErrCorrupt, k)
		}
		resetField(p)
		if err := json.Unmarshal(v, p); err != nil {
			return Record{}, fmt.Errorf("%w: delta: %s: %v", ErrCorrupt, k, err)
		}
	}
	return fromJSON(j, base.ID)
}

// resetField clears the field p points at, so that decoding into it
// replaces a nested object instead of merging into it.
func resetField(p any) {
	switch q := p.(type) {
	case **ownerJSON:
		*q = nil
	case **childJSON:
		*q = nil
	}
}

// readDeltaCanonical sets in j the keys of delta when it is exactly
// EncodeDelta's canonical form (keys in table order, no id); false
// otherwise, j then half set.
func readDeltaCanonical(delta []byte, j *recordJSON) bool {
	shortcut.Ran(shortcut.CanonicalCodec)
	r := &canonicalReader{b: delta, ok: true}
	sep := byte('{')
	for _, f := range recordFields[1:] {
		if !r.hasKey(sep, f.key) {
			continue
		}
		sep = ','
		v := f.val(j)
		resetField(v)
		readValue(r, v)
	}
	if sep == '{' {
		r.lit("{")
	}
	r.lit("}")
	return r.ok && len(r.b) == 0
}
