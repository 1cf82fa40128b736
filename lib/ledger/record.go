package ledger

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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
	// Schedule is the schedule the run was claimed under, in the
	// canonical text lib/schedule writes ("CRON_TZ=UTC 0 2 * * *",
	// "@every 24h0m0s"): what views compute the next slot from ("" none).
	Schedule string
	// Attempt is the 1-based attempt number of a retried slot, Attempts
	// how many attempts the run allows (0: not counted, as in records
	// written before retries).
	Attempt  int
	Attempts int
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

// MaxRecordSize bounds a stored record: what a store reads of one
// (lib/ledger/filestore/wire's Decode, its job log's frames); real
// records are < 1 KiB.
const MaxRecordSize = 64 << 10

// Limits on free-text fields so one record cannot grow without bound.
const (
	maxSourceLen = 1024
	maxErrorLen  = 4096
	maxNoteLen   = 1024
	// MaxScheduleLen bounds Record.Schedule: a cron line's expression
	// with its zone name is far shorter.
	MaxScheduleLen = 256
	// MaxAttempts bounds Record.Attempt and Record.Attempts.
	MaxAttempts = 1000
)

// FormatTime formats t as RFC 3339 in UTC, with as many fractional digits
// as it needs.
func FormatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

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
	if len(r.Source) > maxSourceLen || len(r.Error) > maxErrorLen || len(r.Note) > maxNoteLen || len(r.Owner.Host) > 255 || len(r.Owner.BootID) > 64 || len(r.Schedule) > MaxScheduleLen {
		return bad("a text field is too long")
	}
	if !r.Instant.IsZero() {
		if err := checkInstantRange(r.Instant); err != nil {
			return bad("instant %v", err)
		}
	}
	if r.Attempt < 0 || r.Attempt > MaxAttempts || r.Attempts < 0 || r.Attempts > MaxAttempts {
		return bad("attempt %d of %d is out of range", r.Attempt, r.Attempts)
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
// child alone print PID@START. The keys are the JSON form's table's
// (lib/ledger/internal/form) and extraFieldNames'.
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
	j := r.Form()
	if v, ok := formField(&j, name); ok {
		return v, nil
	}
	return "", badInputf("unknown field %q (want one of %s)", name, fieldNames())
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
