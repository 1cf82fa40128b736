package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/proc"
)

// maxSwaps bounds how often a transition is tried again when the row
// changed between its refused UPDATE and the read that words the refusal
// (another host moved it on, to a state the transition accepts).
const maxSwaps = 5

// update runs one transition as one conditional UPDATE of the row:
// set is the SET list and where the states it is allowed from, with $1
// the id and $2 the time to record (NULL: the server's now()); args are
// $3 on. No row matched: the record is read to word the refusal as
// t.Apply does, and if t.Apply accepts it after all (the row moved on
// meanwhile), the UPDATE is tried again.
func (s *Store) update(id string, t ledger.Transition, set, where string, args ...any) (ledger.Record, error) {
	if err := ledger.ValidID(id); err != nil {
		return ledger.Record{}, err
	}
	q := `UPDATE tether.executions SET ` + set + ` WHERE id = $1 AND NOT pruned AND (` + where + `) RETURNING ` + s.cols()
	for try := 0; ; try++ {
		var r ledger.Record
		err := s.do(func(ctx context.Context, c *pgx.Conn) error {
			var err error
			r, err = scanRecord(c.QueryRow(ctx, q, append([]any{id, s.clock()}, args...)...))
			return err
		})
		if err == nil {
			return r, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) && !missingSchema(err) {
			return ledger.Record{}, fmt.Errorf("cannot %s %s: %w", t.Op, id, err)
		}
		cur, err := s.Get(id)
		if err != nil {
			return ledger.Record{}, fmt.Errorf("cannot %s %s: %w", t.Op, id, err)
		}
		next := cur
		if err := t.Apply(&next, time.Now()); err != nil || try == maxSwaps {
			if err == nil {
				err = fmt.Errorf("the execution kept changing (%s)", cur.State())
			}
			return cur, fmt.Errorf("cannot %s %s: %w", t.Op, id, err)
		}
	}
}

// ownerSet is the SET list that makes $3..$7 the owner.
const ownerSet = `owner_host = $3, owner_boot_id = $4, owner_pidns = $5, owner_pid = $6, owner_start = $7`

// now is the SQL time a transition records: the test clock or now().
const now = `coalesce($2::timestamptz, now())`

// Fence: claimed → claimed+fenced.
func (s *Store) Fence(id string) (ledger.Record, error) {
	return s.update(id, ledger.FenceTransition(), `fenced_at = `+now, `status = 'claimed' AND fenced_at IS NULL`)
}

// Adopt: claimed+fenced → running, owned by owner (with this handle's
// lease, or none).
func (s *Store) Adopt(id string, owner ledger.Owner) (ledger.Record, error) {
	t, err := ledger.AdoptTransition(owner)
	if err != nil {
		return ledger.Record{}, err
	}
	return s.update(id, t,
		`status = 'running', started_at = `+now+`, `+ownerSet+`, lease = $8::interval, lease_until = now() + $8::interval`,
		`status = 'claimed' AND fenced_at IS NOT NULL`,
		append(ownerArgs(owner), s.lease())...)
}

// Start: claimed (not fenced) → running; owner nil keeps the claimer (and
// its lease, unless this handle records one).
func (s *Store) Start(id string, owner *ledger.Owner) (ledger.Record, error) {
	t, err := ledger.StartTransition(owner)
	if err != nil {
		return ledger.Record{}, err
	}
	where := `status = 'claimed' AND fenced_at IS NULL`
	leaseSet := `lease = coalesce($3::interval, lease), lease_until = CASE WHEN $3::interval IS NULL THEN lease_until ELSE now() + $3::interval END`
	if owner == nil {
		return s.update(id, t, `status = 'running', started_at = `+now+`, `+leaseSet, where, s.lease())
	}
	return s.update(id, t,
		`status = 'running', started_at = `+now+`, `+ownerSet+`, lease = $8::interval, lease_until = now() + $8::interval`,
		where, append(ownerArgs(*owner), s.lease())...)
}

// SetChild records the payload of a running execution.
func (s *Store) SetChild(id string, child proc.ID) (ledger.Record, error) {
	t, err := ledger.SetChildTransition(child)
	if err != nil {
		return ledger.Record{}, err
	}
	return s.update(id, t, `child_pid = $3, child_start = $4`,
		// $2 (the time) is not needed, but must have a type.
		`status = 'running' AND ($2::timestamptz IS NULL OR true)`, int32(child.PID), null(int64(child.Start)))
}

// Finish: running → completed | failed, claimed (not fenced) → failed.
func (s *Store) Finish(id string, status ledger.Status, exitCode *int, errMsg string) (ledger.Record, error) {
	t, err := ledger.FinishTransition(status, exitCode, errMsg)
	if err != nil {
		return ledger.Record{}, err
	}
	var code any
	if exitCode != nil {
		code = int32(*exitCode)
	}
	return s.update(id, t,
		`status = $3, finished_at = `+now+`, exit_code = $4, error = $5`,
		`status = 'running' OR (status = 'claimed' AND fenced_at IS NULL AND $3 = 'failed')`,
		string(status), code, null(errMsg))
}

// RecordLate keeps a result that came too late on the record of an
// execution recovery ended (unknown or abandoned), the status unchanged,
// for the operator to see (show --json's "late"). Only the first late
// result is kept. It reports whether it kept this one. Its WHERE is
// ledger.CanKeepLate, in SQL, checked in the same statement.
func (s *Store) RecordLate(id string, status ledger.Status, exitCode *int, errMsg string) (bool, error) {
	if err := ledger.ValidID(id); err != nil {
		return false, err
	}
	var code any
	if exitCode != nil {
		code = int32(*exitCode)
	}
	var n int64
	err := s.do(func(ctx context.Context, c *pgx.Conn) error {
		tag, err := c.Exec(ctx, `UPDATE tether.executions
			SET late_status = $3, late_exit_code = $4, late_error = $5, late_finished_at = `+now+`
			WHERE id = $1 AND NOT pruned AND status IN ('unknown', 'abandoned') AND late_finished_at IS NULL`,
			id, s.clock(), string(status), code, null(ledger.ErrorText(errMsg)))
		n = tag.RowsAffected()
		return err
	})
	return n == 1, err
}

// AbortHandoff: claimed (fenced or not) → failed, with why.
func (s *Store) AbortHandoff(id, why string) (ledger.Record, error) {
	t := ledger.AbortTransition(why)
	return s.update(id, t, `status = 'failed', finished_at = `+now+`, error = $3`, `status = 'claimed'`, null(ledger.ErrorText(why)))
}

// Beat records that a claimed or running execution is alive (beat_at,
// the note if given) and renews its lease, if it has one, by its length.
// With IfLatest it is refused when its job has a newer execution; the
// check is part of the same statement.
func (s *Store) Beat(id string, o ledger.BeatOptions) (ledger.Record, error) {
	t, err := ledger.BeatTransition(o)
	if err != nil {
		return ledger.Record{}, err
	}
	var note any
	if o.Note != nil {
		note = null(*o.Note)
	}
	where := `status IN ` + openStatuses
	if o.IfLatest {
		where += ` AND NOT EXISTS (SELECT 1 FROM tether.executions n
			WHERE n.job = executions.job AND n.seq > executions.seq AND NOT n.pruned)`
		// A refusal of a claimed or running execution names the newer one.
		apply := t.Apply
		t.Apply = func(r *ledger.Record, now time.Time) error {
			if err := apply(r, now); err != nil {
				return err
			}
			newest, err := s.Latest(r.Job)
			if err != nil {
				return err
			}
			if newest.ID != r.ID {
				return ledger.NewerRefusal(newest.ID, r.Job)
			}
			return nil
		}
	}
	return s.update(id, t,
		`beat_at = `+now+`, note = CASE WHEN $3 THEN $4 ELSE note END,
		 lease_until = CASE WHEN lease IS NULL THEN lease_until ELSE now() + lease END`,
		where, o.Note != nil, note)
}
