package pgstore

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

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
	{"token", func(s *scanned) any { return &s.token }},
}

// cols is recordColumns' names, comma-separated.
var cols = func() string {
	names := make([]string, len(recordColumns))
	for i, c := range recordColumns {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}()

// colsNoToken is cols for a schema of version 2 or older, which has no
// token column: NULL in its place.
var colsNoToken = strings.Replace(cols, ", token", ", NULL::bigint", 1)

// cols is the list a record is read from in s's database: colsNoToken
// once a statement found no token column (a schema an older tether made
// and no claim of this one migrated yet), which do then runs again, so
// that such a store is read and its executions ended as they are.
func (s *Store) cols() string {
	if s.noToken {
		return colsNoToken
	}
	return cols
}

// noTokenColumn reports whether err says the token column is missing.
func noTokenColumn(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42703" && strings.Contains(pe.Message, "token")
}

// scanned is one row of recordColumns as the driver scans it: NULL-able
// columns into pointers, which record turns into a Record's zero values.
type scanned struct {
	r                                         ledger.Record
	source, instant, host, boot, errMsg, note *string
	status                                    string
	pidns, ownerStart, childStart             *int64
	token                                     *int64
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
	r.Token = u64(s.token)
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
