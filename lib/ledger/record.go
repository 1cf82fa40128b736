package ledger

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tether-sh/tether/lib/internal/shortcut"
	"github.com/tether-sh/tether/lib/proc"
)

// Status is the state of one execution.
type Status string

// The statuses of the state machine. Claimed covers both "claimed" and
// "claimed+fenced" (Record.Fenced tells them apart).
const (
	Claimed   Status = "claimed"
	Running   Status = "running"
	Completed Status = "completed"
	Failed    Status = "failed"
	Unknown   Status = "unknown"
	Abandoned Status = "abandoned"
)

// Statuses lists every status in state-machine order.
var Statuses = []Status{Claimed, Running, Completed, Failed, Unknown, Abandoned}

// Terminal reports whether s never changes again.
func (s Status) Terminal() bool {
	return s == Completed || s == Failed || s == Unknown || s == Abandoned
}

// Valid reports whether s is one of Statuses.
func (s Status) Valid() bool {
	for _, v := range Statuses {
		if s == v {
			return true
		}
	}
	return false
}

// ParseStatus parses a status name.
func ParseStatus(s string) (Status, error) {
	if st := Status(s); st.Valid() {
		return st, nil
	}
	return "", badInputf("unknown status %q (want claimed, running, completed, failed, unknown or abandoned)", s)
}

// Owner identifies the process that owns an execution: boot, PID
// namespace and PID@START, with the host name as a label. Empty Host or
// BootID and zero PIDNS or Start mean "not known"; a zero PIDNS is also
// what records written before PID namespaces were recorded hold.
type Owner struct {
	Host   string
	BootID string
	PIDNS  uint64 // inode of the PID namespace PID is a number of (/proc/self/ns/pid)
	PID    int
	Start  uint64
}

// ID returns the owner's process identity.
func (o Owner) ID() proc.ID { return proc.ID{PID: o.PID, Start: o.Start} }

// String formats the owner as PID@START on HOST.
func (o Owner) String() string {
	s := o.ID().String()
	if o.Host != "" {
		s += " on " + o.Host
	}
	return s
}

// Record is one execution. Zero values mean "not known / not yet": an empty
// Source, Error, Note or Host, a zero time, Child.PID 0, a nil ExitCode.
type Record struct {
	ID         string
	Job        string
	Source     string
	Instant    time.Time // the scheduled instant (UTC), zero if none
	Status     Status
	Fenced     bool
	FencedAt   time.Time
	Owner      Owner
	Child      proc.ID // the payload process, PID 0 if not recorded
	ClaimedAt  time.Time
	StartedAt  time.Time
	FinishedAt time.Time
	ExitCode   *int
	Error      string
	BeatAt     time.Time // the last beat, zero if none
	Note       string    // the last beat's progress note
	// LeaseUntil is when the owner's lease runs out, by the store's clock
	// (zero: no lease; the file store keeps none).
	LeaseUntil time.Time
	// Late is a result its owner tried to record after recovery had
	// ended the execution: kept for the operator, the status unchanged
	// (nil: none).
	Late *Late
}

// Late is a result recorded too late: a finish refused because recovery
// had already judged the execution.
type Late struct {
	Status     Status // what the owner reported: completed or failed
	ExitCode   *int
	Error      string
	FinishedAt time.Time
}

// State describes the record's state for messages: "claimed",
// "claimed+fenced", "running", "completed", ...
func (r Record) State() string {
	if r.Status == Claimed && r.Fenced {
		return "claimed+fenced"
	}
	return string(r.Status)
}

// recordFormat is the on-disk format version ("v").
const recordFormat = 1

// maxRecordSize bounds what the decoder reads; real records are < 1 KiB.
const maxRecordSize = 64 << 10

// Limits on free-text fields so one record cannot grow without bound.
const (
	maxSourceLen = 1024
	maxErrorLen  = 4096
	maxNoteLen   = 1024
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

// FormatTime formats t as RFC 3339 in UTC, with as many fractional digits
// as it needs.
func FormatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

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

// encode returns the on-disk form of r.
func (r Record) encode() []byte {
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
	if len(b) > maxRecordSize {
		return Record{}, fmt.Errorf("%w: record larger than %d bytes", ErrCorrupt, maxRecordSize)
	}
	j, err := parseRecordJSON(b)
	if err != nil {
		return Record{}, err
	}
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

// Validate reports whether r is a legal state of the state machine
// (ErrCorrupt if not): valid id and job, the timestamps its status implies
// and no others, an owner, and bounded fields.
func (r Record) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
	}
	if err := ValidID(r.ID); err != nil {
		return bad("id %q is malformed", r.ID)
	}
	if err := ValidJob(r.Job); err != nil {
		return bad("job %q is malformed", r.Job)
	}
	if !r.Status.Valid() {
		return bad("unknown status %q", r.Status)
	}
	if r.ClaimedAt.IsZero() {
		return bad("claimed_at is missing")
	}
	if r.Owner.PID < 1 || r.Owner.PID > proc.MaxPID {
		return bad("owner pid %d is out of range", r.Owner.PID)
	}
	if r.Child.PID < 0 || r.Child.PID > proc.MaxPID || (r.Child.PID == 0 && r.Child.Start != 0) {
		return bad("child pid %d is out of range", r.Child.PID)
	}
	if r.Fenced != !r.FencedAt.IsZero() {
		return bad("fenced=%v disagrees with fenced_at", r.Fenced)
	}
	if len(r.Source) > maxSourceLen || len(r.Error) > maxErrorLen || len(r.Note) > maxNoteLen || len(r.Owner.Host) > 255 || len(r.Owner.BootID) > 64 {
		return bad("a text field is too long")
	}
	if !r.Instant.IsZero() {
		if err := checkInstantRange(r.Instant); err != nil {
			return bad("instant %v", err)
		}
	}
	if r.Note != "" && r.BeatAt.IsZero() {
		return bad("a note without beat_at")
	}
	if r.ExitCode != nil && (*r.ExitCode < 0 || *r.ExitCode > 255) {
		return bad("exit_code %d is not 0..255", *r.ExitCode)
	}
	started, finished := !r.StartedAt.IsZero(), !r.FinishedAt.IsZero()
	var wantStarted, wantFinished, maybeStarted bool
	switch r.Status {
	case Claimed:
	case Running:
		wantStarted = true
	case Completed, Unknown:
		wantStarted, wantFinished = true, true
	case Failed:
		wantFinished, maybeStarted = true, true
	case Abandoned:
		wantFinished = true
	}
	if started != wantStarted && !(maybeStarted && started) {
		return bad("status %s with started_at %v", r.Status, timeOrNull(r.StartedAt))
	}
	if finished != wantFinished {
		return bad("status %s with finished_at %v", r.Status, timeOrNull(r.FinishedAt))
	}
	if !finished && r.ExitCode != nil {
		return bad("status %s with an exit code", r.Status)
	}
	if !started && r.Child.PID != 0 {
		return bad("status %s with a child but never started", r.Status)
	}
	return nil
}

func timeOrNull(t time.Time) string {
	if t.IsZero() {
		return "null"
	}
	return FormatTime(t)
}

// Field returns the value of one --json key for --field: empty when null.
// Nested values are reachable as owner.pid, child.start, ...; owner and
// child alone print PID@START. The keys are recordFields' and
// extraFieldNames'.
func (r Record) Field(name string) (string, error) {
	tstr := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return FormatTime(t)
	}
	switch name {
	case "owner":
		if r.Owner.PID == 0 {
			return "", nil
		}
		return r.Owner.ID().String(), nil
	case "child":
		if r.Child.PID == 0 {
			return "", nil
		}
		return r.Child.String(), nil
	case "lease_until":
		return tstr(r.LeaseUntil), nil
	case "late.status", "late.exit_code", "late.error", "late.finished_at":
		if r.Late == nil {
			return "", nil
		}
		switch name {
		case "late.status":
			return string(r.Late.Status), nil
		case "late.exit_code":
			if r.Late.ExitCode == nil {
				return "", nil
			}
			return strconv.Itoa(*r.Late.ExitCode), nil
		case "late.error":
			return r.Late.Error, nil
		}
		return tstr(r.Late.FinishedAt), nil
	}
	j := r.toJSON()
	if v, ok := storedField(&j, name); ok {
		return v, nil
	}
	return "", badInputf("unknown field %q (want one of %s)", name, fieldNames)
}

// ErrorText makes msg fit a record's error field: valid UTF-8 (invalid
// bytes become U+FFFD, as JSON would make them) and at most the field's
// limit in bytes, cut on a character boundary and marked with "...". A
// result message must never be refused for its length: the record would
// then stay running, and recovery would call a payload that never ran
// unknown.
func ErrorText(msg string) string {
	msg = strings.ToValidUTF8(msg, "\uFFFD")
	if len(msg) <= maxErrorLen {
		return msg
	}
	const more = "..."
	cut := maxErrorLen - len(more)
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + more
}
