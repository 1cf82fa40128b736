package ledger

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/tether-sh/tether/lib/internal/shortcut"
	"github.com/tether-sh/tether/lib/proc"
)

// recordJSON is the wire form: every key always present, null when unknown.
// V is set only on disk.
type recordJSON struct {
	V          int        `json:"v,omitempty"`
	ID         string     `json:"id"`
	Job        string     `json:"job"`
	Source     *string    `json:"source"`
	Instant    *string    `json:"instant"`
	Status     Status     `json:"status"`
	Fenced     bool       `json:"fenced"`
	FencedAt   *string    `json:"fenced_at"`
	Owner      *ownerJSON `json:"owner"`
	Child      *childJSON `json:"child"`
	ClaimedAt  *string    `json:"claimed_at"`
	StartedAt  *string    `json:"started_at"`
	FinishedAt *string    `json:"finished_at"`
	ExitCode   *int       `json:"exit_code"`
	Error      *string    `json:"error"`
	BeatAt     *string    `json:"beat_at"`
	Note       *string    `json:"note"`
}

type ownerJSON struct {
	Host   *string `json:"host"`
	BootID *string `json:"boot_id"`
	PIDNS  *uint64 `json:"pidns"`
	PID    int     `json:"pid"`
	Start  *uint64 `json:"start"`
}

type childJSON struct {
	PID   int     `json:"pid"`
	Start *uint64 `json:"start"`
}

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

func u64p(v uint64) *uint64 {
	if v == 0 {
		return nil
	}
	return &v
}

func (r Record) toJSON() recordJSON {
	j := recordJSON{
		ID: r.ID, Job: r.Job, Source: strp(r.Source), Instant: timep(r.Instant),
		Status: r.Status, Fenced: r.Fenced, FencedAt: timep(r.FencedAt),
		ClaimedAt: timep(r.ClaimedAt), StartedAt: timep(r.StartedAt), FinishedAt: timep(r.FinishedAt),
		ExitCode: r.ExitCode, Error: strp(r.Error), BeatAt: timep(r.BeatAt), Note: strp(r.Note),
	}
	if r.Owner.PID != 0 {
		j.Owner = &ownerJSON{Host: strp(r.Owner.Host), BootID: strp(r.Owner.BootID), PIDNS: u64p(r.Owner.PIDNS), PID: r.Owner.PID, Start: u64p(r.Owner.Start)}
	}
	if r.Child.PID != 0 {
		j.Child = &childJSON{PID: r.Child.PID, Start: u64p(r.Child.Start)}
	}
	return j
}

// MarshalJSON encodes the record as the object `ledger show --json` prints:
// the stored form's keys, then lease_until and late (a store's, null in
// the file store, which keeps neither and does not write them).
func (r Record) MarshalJSON() ([]byte, error) {
	j := r.toJSON()
	var b []byte
	ok := false
	if shortcut.Take(shortcut.CanonicalCodec) {
		b, ok = appendCanonical(make([]byte, 0, 512), &j)
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

// Encode returns the stored form of r (what Decode reads back): the
// payload of a claim frame in the file store's job logs, one line of
// canonical JSON.
func (r Record) Encode() []byte {
	j := r.toJSON()
	j.V = recordFormat
	if shortcut.Take(shortcut.CanonicalCodec) {
		if b, ok := appendCanonical(make([]byte, 0, 512), &j); ok {
			return append(b, '\n')
		}
	}
	b, err := json.Marshal(j)
	if err != nil {
		// Only strings, ints and bools: Marshal cannot fail.
		panic("ledger: encoding a record: " + err.Error())
	}
	return append(b, '\n')
}

// parseRecordJSON reads the JSON of one record: the canonical form
// directly, anything else with encoding/json.
func parseRecordJSON(b []byte) (recordJSON, error) {
	if shortcut.Take(shortcut.CanonicalCodec) {
		if j, ok := readCanonical(b); ok {
			return j, nil
		}
	}
	var j recordJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&j); err != nil {
		return recordJSON{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if dec.More() {
		return recordJSON{}, fmt.Errorf("%w: trailing data after the record", ErrCorrupt)
	}
	return j, nil
}

// Decode parses and validates one record as stored on disk (or as printed by
// --json). If id is not empty the record must carry that id. A record that
// does not parse, or whose fields are not a legal state, is ErrCorrupt.
func Decode(b []byte, id string) (Record, error) {
	if len(b) > MaxRecordSize {
		return Record{}, fmt.Errorf("%w: record larger than %d bytes", ErrCorrupt, MaxRecordSize)
	}
	j, err := parseRecordJSON(b)
	if err != nil {
		return Record{}, err
	}
	return fromJSON(j, id)
}

// fromJSON checks and converts the wire form of one record (Decode's
// second half, shared with ApplyDelta).
func fromJSON(j recordJSON, id string) (Record, error) {
	var err error
	if j.V != 0 && j.V != recordFormat {
		return Record{}, fmt.Errorf("%w: record format %d is not %d", ErrCorrupt, j.V, recordFormat)
	}
	r := Record{ID: j.ID, Job: j.Job, Status: j.Status, Fenced: j.Fenced, ExitCode: j.ExitCode}
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	tm := func(name string, p *string) time.Time {
		if p == nil || err != nil {
			return time.Time{}
		}
		t, perr := time.Parse(time.RFC3339Nano, *p)
		if perr != nil {
			err = fmt.Errorf("%w: %s %q is not an RFC 3339 time", ErrCorrupt, name, *p)
			return time.Time{}
		}
		if t.IsZero() {
			err = fmt.Errorf("%w: %s is the zero time", ErrCorrupt, name)
		}
		return t.UTC()
	}
	r.Source = str(j.Source)
	r.Error = str(j.Error)
	r.Instant = tm("instant", j.Instant)
	r.FencedAt = tm("fenced_at", j.FencedAt)
	r.ClaimedAt = tm("claimed_at", j.ClaimedAt)
	r.StartedAt = tm("started_at", j.StartedAt)
	r.FinishedAt = tm("finished_at", j.FinishedAt)
	r.BeatAt = tm("beat_at", j.BeatAt) // absent in records written before beats
	r.Note = str(j.Note)
	if err != nil {
		return Record{}, err
	}
	if j.Owner != nil {
		r.Owner = Owner{Host: str(j.Owner.Host), BootID: str(j.Owner.BootID), PID: j.Owner.PID}
		if j.Owner.PIDNS != nil {
			r.Owner.PIDNS = *j.Owner.PIDNS
		}
		if j.Owner.Start != nil {
			r.Owner.Start = *j.Owner.Start
		}
	}
	if j.Child != nil {
		r.Child = proc.ID{PID: j.Child.PID}
		if j.Child.Start != nil {
			r.Child.Start = *j.Child.Start
		}
	}
	if err := r.Validate(); err != nil {
		return Record{}, err
	}
	if id != "" && r.ID != id {
		return Record{}, fmt.Errorf("%w: record carries id %q", ErrCorrupt, r.ID)
	}
	return r, nil
}
