package ledger

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/tether-sh/tether/lib/internal/shortcut"
	"github.com/tether-sh/tether/lib/ledger/internal/form"
)

// A record's JSON form (its structs, its field table, its canonical
// writer) is lib/ledger/internal/form's, shared with the file store's
// stored form (lib/ledger/filestore/wire): here is what a user reads of
// it, MarshalJSON and Field, and the one conversion both need, Form.

func strp(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func timep(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := FormatTime(t)
	return &s
}

func countp(n int) *int {
	if n == 0 {
		return nil
	}
	return &n
}

func u64p(v uint64) *uint64 {
	if v == 0 {
		return nil
	}
	return &v
}

// Form returns r's JSON form (lib/ledger/internal/form), without the
// store's lease and late result: what MarshalJSON prints of it and
// lib/ledger/filestore/wire stores. Only packages under lib/ledger can
// name its type. Its keys but the owner and the child are generated from
// form.Fields (recordform_gen.go's formOf).
func (r Record) Form() form.Record {
	j := formOf(&r)
	if r.Owner.PID != 0 {
		j.Owner = &form.Owner{Host: strp(r.Owner.Host), BootID: strp(r.Owner.BootID), PIDNS: u64p(r.Owner.PIDNS), PID: r.Owner.PID, Start: u64p(r.Owner.Start)}
	}
	if r.Child.PID != 0 {
		j.Child = &form.Child{PID: r.Child.PID, Start: u64p(r.Child.Start)}
	}
	return j
}

// MarshalJSON encodes the record as the object `ledger show --json` prints:
// the stored form's keys, then lease_until and late (a store's, null in
// the file store, which keeps neither and does not write them).
func (r Record) MarshalJSON() ([]byte, error) {
	j := r.Form()
	var b []byte
	ok := false
	if shortcut.Take(shortcut.CanonicalCodec) {
		b, ok = form.AppendCanonical(make([]byte, 0, 512), &j)
	}
	if !ok {
		var err error
		if b, err = json.Marshal(j); err != nil {
			return nil, err
		}
	}
	b = append(b[:len(b)-1], `,"lease_until":`...)
	if r.LeaseUntil.IsZero() {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendQuote(b, FormatTime(r.LeaseUntil))
	}
	b = append(b, `,"late":`...)
	if r.Late == nil {
		b = append(b, "null"...)
	} else {
		l, err := json.Marshal(lateJSON{Status: r.Late.Status, ExitCode: r.Late.ExitCode, Error: strp(r.Late.Error), FinishedAt: timep(r.Late.FinishedAt)})
		if err != nil {
			return nil, err
		}
		b = append(b, l...)
	}
	return append(b, '}'), nil
}

type lateJSON struct {
	Status     Status  `json:"status"`
	ExitCode   *int    `json:"exit_code"`
	Error      *string `json:"error"`
	FinishedAt *string `json:"finished_at"`
}

// extraFieldNames are the keys MarshalJSON adds to the stored ones (a
// database store's lease and late result).
var extraFieldNames = []string{"lease_until", "late.status", "late.exit_code", "late.error", "late.finished_at"}

// fieldNames lists every name --field takes, for its error message.
func fieldNames() string {
	var names []string
	for _, f := range form.Fields {
		names = append(names, f.Key)
		switch f.Key {
		case "owner":
			for _, o := range form.OwnerFields {
				names = append(names, "owner."+o.Key)
			}
		case "child":
			for _, c := range form.ChildFields {
				names = append(names, "child."+c.Key)
			}
		}
	}
	return strings.Join(append(names, extraFieldNames...), ", ")
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

// formField is Field for the keys of the JSON form's table.
func formField(j *form.Record, name string) (string, bool) {
	top, sub, nested := strings.Cut(name, ".")
	v, ok := form.Lookup(form.Fields, j, top)
	if !ok {
		return "", false
	}
	if !nested {
		return fieldText(v), true
	}
	switch p := v.(type) {
	case **form.Owner:
		if *p == nil {
			_, ok := form.Lookup(form.OwnerFields, &form.Owner{}, sub)
			return "", ok
		}
		v, ok = form.Lookup(form.OwnerFields, *p, sub)
	case **form.Child:
		if *p == nil {
			_, ok := form.Lookup(form.ChildFields, &form.Child{}, sub)
			return "", ok
		}
		v, ok = form.Lookup(form.ChildFields, *p, sub)
	default:
		return "", false
	}
	if !ok {
		return "", false
	}
	return fieldText(v), true
}
