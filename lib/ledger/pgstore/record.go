package pgstore

import (
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/proc"
)

// recordColumns are the columns a record is read from, each with where
// scanRecord puts its value: the one list that cols (the SELECT and
// RETURNING list) and scanRecord's destinations both come from, so that
// they cannot fall out of step; TestRecordColumns ties it to the table a
// migrated database has.
var recordColumns = []struct {
	name string
	dest func(*scanned) any
}{
	{"id", func(s *scanned) any { return &s.r.ID }},
	{"job", func(s *scanned) any { return &s.r.Job }},
	{"source", func(s *scanned) any { return &s.source }},
	{"instant", func(s *scanned) any { return &s.instant }},
	{"status", func(s *scanned) any { return &s.status }},
	{"fenced_at", func(s *scanned) any { return &s.fencedAt }},
	{"owner_host", func(s *scanned) any { return &s.host }},
	{"owner_boot_id", func(s *scanned) any { return &s.boot }},
	{"owner_pidns", func(s *scanned) any { return &s.pidns }},
	{"owner_pid", func(s *scanned) any { return &s.ownerPID }},
	{"owner_start", func(s *scanned) any { return &s.ownerStart }},
	{"child_pid", func(s *scanned) any { return &s.childPID }},
	{"child_start", func(s *scanned) any { return &s.childStart }},
	{"claimed_at", func(s *scanned) any { return &s.r.ClaimedAt }},
	{"started_at", func(s *scanned) any { return &s.startedAt }},
	{"finished_at", func(s *scanned) any { return &s.finishedAt }},
	{"exit_code", func(s *scanned) any { return &s.exitCode }},
	{"error", func(s *scanned) any { return &s.errMsg }},
	{"beat_at", func(s *scanned) any { return &s.beatAt }},
	{"note", func(s *scanned) any { return &s.note }},
	{"lease_until", func(s *scanned) any { return &s.leaseUntil }},
	{"late_status", func(s *scanned) any { return &s.lateStatus }},
	{"late_exit_code", func(s *scanned) any { return &s.lateCode }},
	{"late_error", func(s *scanned) any { return &s.lateErr }},
	{"late_finished_at", func(s *scanned) any { return &s.lateAt }},
	{"schedule", func(s *scanned) any { return &s.schedule }},
	{"attempt", func(s *scanned) any { return &s.attempt }},
	{"attempts", func(s *scanned) any { return &s.attempts }},
}

// cols is recordColumns' names, comma-separated.
var cols = func() string {
	names := make([]string, len(recordColumns))
	for i, c := range recordColumns {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}()

// v2Cols is cols as a schema of version 2 or 1 answers them, NULL for
// the columns of version 3 (v3Columns): what the reads of a store ask
// (Store.cols) once they found a column missing, so that a database an
// older release made is read as it is; the first write migrates it.
var v2Cols = func() string {
	names := make([]string, len(recordColumns))
	for i, c := range recordColumns {
		names[i] = c.name
		if t, ok := v3Columns[c.name]; ok {
			names[i] = "NULL::" + t + " AS " + c.name
		}
	}
	return strings.Join(names, ", ")
}()

// v3Columns are the columns schema version 3 added, with their types.
var v3Columns = map[string]string{"schedule": "text", "attempt": "integer", "attempts": "integer"}

// cols is the column list the store's reads select: v2Cols while the
// database lacks the columns of version 3 (doLocked found them missing).
// Called with s.mu held (in do's fn).
func (s *Store) cols() string {
	if s.legacy {
		return v2Cols
	}
	return cols
}

// scanned is one row of recordColumns as the driver scans it: NULL-able
// columns into pointers, which record turns into a Record's zero values.
type scanned struct {
	r                                         ledger.Record
	source, instant, host, boot, errMsg, note *string
	schedule                                  *string
	attempt, attempts                         *int32
	status                                    string
	pidns, ownerStart, childStart             *int64
	childPID, exitCode, lateCode              *int32
	lateStatus, lateErr                       *string
	fencedAt, startedAt, finishedAt, beatAt   *time.Time
	leaseUntil, lateAt                        *time.Time
	ownerPID                                  int32
}

// instantLayout is the text form of an instant in the table: fixed width,
// so it sorts, with every nanosecond the file store keeps.
const instantLayout = "2006-01-02T15:04:05.000000000Z"

func instantText(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(instantLayout)
}

// null returns nil (SQL NULL) for a zero value.
func null[T comparable](v T) any {
	var zero T
	if v == zero {
		return nil
	}
	return v
}

// scanRecord reads one row of cols (and extra destinations after them).
func scanRecord(row pgx.Row, extra ...any) (ledger.Record, error) {
	var s scanned
	dest := make([]any, 0, len(recordColumns)+len(extra))
	for _, c := range recordColumns {
		dest = append(dest, c.dest(&s))
	}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return ledger.Record{}, err
	}
	return s.record()
}

// record is the Record s holds, validated.
func (s *scanned) record() (ledger.Record, error) {
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	tm := func(p *time.Time) time.Time {
		if p == nil {
			return time.Time{}
		}
		return p.UTC()
	}
	u64 := func(p *int64) uint64 {
		if p == nil || *p < 0 {
			return 0
		}
		return uint64(*p)
	}
	r := s.r
	r.Source, r.Status, r.Error, r.Note = str(s.source), ledger.Status(s.status), str(s.errMsg), str(s.note)
	if s.instant != nil {
		t, err := time.Parse(instantLayout, *s.instant)
		if err != nil {
			return ledger.Record{}, fmt.Errorf("%w: execution %s: instant %q", ledger.ErrCorrupt, r.ID, *s.instant)
		}
		r.Instant = t
	}
	r.FencedAt, r.Fenced = tm(s.fencedAt), s.fencedAt != nil
	r.Owner = ledger.Owner{Host: str(s.host), BootID: str(s.boot), PIDNS: u64(s.pidns), PID: int(s.ownerPID), Start: u64(s.ownerStart)}
	if s.childPID != nil {
		r.Child = proc.ID{PID: int(*s.childPID), Start: u64(s.childStart)}
	}
	r.ClaimedAt, r.StartedAt, r.FinishedAt = r.ClaimedAt.UTC(), tm(s.startedAt), tm(s.finishedAt)
	if s.exitCode != nil {
		c := int(*s.exitCode)
		r.ExitCode = &c
	}
	r.BeatAt, r.LeaseUntil = tm(s.beatAt), tm(s.leaseUntil)
	r.Schedule = str(s.schedule)
	if s.attempt != nil {
		r.Attempt = int(*s.attempt)
	}
	if s.attempts != nil {
		r.Attempts = int(*s.attempts)
	}
	if s.lateAt != nil {
		r.Late = &ledger.Late{Status: ledger.Status(str(s.lateStatus)), Error: str(s.lateErr), FinishedAt: s.lateAt.UTC()}
		if s.lateCode != nil {
			c := int(*s.lateCode)
			r.Late.ExitCode = &c
		}
	}
	if err := r.Validate(); err != nil {
		return ledger.Record{}, fmt.Errorf("execution %s: %w", r.ID, err)
	}
	return r, nil
}

// ownerArgs are an owner's five column values.
func ownerArgs(o ledger.Owner) []any {
	return []any{null(o.Host), null(o.BootID), null(int64(o.PIDNS)), int32(o.PID), null(int64(o.Start))}
}
