package pgstore

import (
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/proc"
)

// cols are the columns a record is read from, in scanRecord's order.
const cols = `id, job, source, instant, status, fenced_at, owner_host, owner_boot_id, owner_pidns, owner_pid,
	owner_start, child_pid, child_start, claimed_at, started_at, finished_at, exit_code, error, beat_at, note,
	lease_until, late_status, late_exit_code, late_error, late_finished_at`

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
	var (
		r                                         ledger.Record
		source, instant, host, boot, errMsg, note *string
		status                                    string
		pidns, ownerStart, childStart             *int64
		childPID, exitCode, lateCode              *int32
		lateStatus, lateErr                       *string
		fencedAt, startedAt, finishedAt, beatAt   *time.Time
		leaseUntil, lateAt                        *time.Time
		ownerPID                                  int32
	)
	dest := []any{&r.ID, &r.Job, &source, &instant, &status, &fencedAt, &host, &boot, &pidns, &ownerPID,
		&ownerStart, &childPID, &childStart, &r.ClaimedAt, &startedAt, &finishedAt, &exitCode, &errMsg, &beatAt, &note,
		&leaseUntil, &lateStatus, &lateCode, &lateErr, &lateAt}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return ledger.Record{}, err
	}
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
	r.Source, r.Status, r.Error, r.Note = str(source), ledger.Status(status), str(errMsg), str(note)
	if instant != nil {
		t, err := time.Parse(instantLayout, *instant)
		if err != nil {
			return ledger.Record{}, fmt.Errorf("%w: execution %s: instant %q", ledger.ErrCorrupt, r.ID, *instant)
		}
		r.Instant = t
	}
	r.FencedAt, r.Fenced = tm(fencedAt), fencedAt != nil
	r.Owner = ledger.Owner{Host: str(host), BootID: str(boot), PIDNS: u64(pidns), PID: int(ownerPID), Start: u64(ownerStart)}
	if childPID != nil {
		r.Child = proc.ID{PID: int(*childPID), Start: u64(childStart)}
	}
	r.ClaimedAt, r.StartedAt, r.FinishedAt = r.ClaimedAt.UTC(), tm(startedAt), tm(finishedAt)
	if exitCode != nil {
		c := int(*exitCode)
		r.ExitCode = &c
	}
	r.BeatAt, r.LeaseUntil = tm(beatAt), tm(leaseUntil)
	if lateAt != nil {
		r.Late = &ledger.Late{Status: ledger.Status(str(lateStatus)), Error: str(lateErr), FinishedAt: lateAt.UTC()}
		if lateCode != nil {
			c := int(*lateCode)
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
