package pgstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tether-sh/tether/lib/ledger"
)

type timeNow struct{ t time.Time }

// openRecords returns the claimed and running executions matching cond
// (with $1...), oldest first, and the server's time of the read.
func (s *Store) openRecords(ctx context.Context, q querier, cond string, args ...any) ([]ledger.Record, time.Time, error) {
	rows, err := q.Query(ctx, `SELECT `+s.cols()+`, now() FROM tether.executions
		WHERE status IN `+openStatuses+` AND `+cond+` ORDER BY seq`, args...)
	if err != nil {
		return nil, time.Time{}, err
	}
	defer rows.Close()
	var out []ledger.Record
	var serverNow time.Time
	for rows.Next() {
		r, err := scanRecord(rows, &serverNow)
		if err != nil {
			return nil, time.Time{}, err
		}
		out = append(out, r)
	}
	return out, serverNow, rows.Err()
}

// recoverRow judges one open record (ledger.JudgeRecord: by PID where its
// owner is this process's to judge, else by its lease on the server's
// clock, serverNow) and, if its owner is gone, ends it by a conditional
// UPDATE that matches only the row as judged (same status, owner, fence,
// child and lease; a lease judged expired must still be by the server's
// clock). It returns the record as it now stands and, when it was left
// alone, why.
func (s *Store) recoverRow(ctx context.Context, q querier, r ledger.Record, grace time.Duration, serverNow time.Time) (ledger.Record, string, error) {
	at := serverNow
	if c := s.clock(); c != nil {
		at = *c
	}
	byLease := false
	next, why := ledger.JudgeRecord(r, grace, at, func(r ledger.Record) (ledger.Liveness, string) {
		switch {
		case r.LeaseUntil.IsZero():
			return ledger.Uncertain, "another host's or PID namespace's, with no lease: judged only where it runs"
		case r.LeaseUntil.After(serverNow):
			return ledger.Alive, "its lease runs until " + ledger.FormatTime(r.LeaseUntil)
		}
		byLease = true
		return ledger.Dead, "its lease ran out at " + ledger.FormatTime(r.LeaseUntil)
	})
	if next.Status == r.Status {
		return r, why, nil
	}
	got, err := s.markGone(ctx, q, r, next, byLease)
	return got, "", err
}

// markGone writes next, the verdict on r, if the row is still r as
// judged; otherwise it returns the row as it is now.
func (s *Store) markGone(ctx context.Context, q querier, r, next ledger.Record, byLease bool) (ledger.Record, error) {
	var childPID any
	if r.Child.PID != 0 {
		childPID = int32(r.Child.PID)
	}
	var lease, fenced any
	if !r.LeaseUntil.IsZero() {
		lease = r.LeaseUntil
	}
	if r.Fenced {
		fenced = r.FencedAt
	}
	got, err := scanRecord(q.QueryRow(ctx, `UPDATE tether.executions
		SET status = $2, error = $3, finished_at = $4
		WHERE id = $1 AND status = $5 AND owner_pid = $6 AND owner_start IS NOT DISTINCT FROM $7
		  AND owner_boot_id IS NOT DISTINCT FROM $8 AND lease_until IS NOT DISTINCT FROM $9::timestamptz
		  AND fenced_at IS NOT DISTINCT FROM $10::timestamptz AND child_pid IS NOT DISTINCT FROM $11::integer
		  AND (NOT $12 OR lease_until < now())
		RETURNING `+s.cols(),
		r.ID, string(next.Status), next.Error, next.FinishedAt, string(r.Status), int32(r.Owner.PID),
		null(int64(r.Owner.Start)), null(r.Owner.BootID), lease, fenced, childPID, byLease))
	if errors.Is(err, pgx.ErrNoRows) {
		// It moved on (a finish, a renewal) since it was read.
		return scanRecord(q.QueryRow(ctx, `SELECT `+s.cols()+` FROM tether.executions WHERE id = $1`, r.ID))
	}
	return got, err
}

// Recover judges every claimed or running execution and ends those whose
// owners are gone: local owners by their PIDs, remote ones by an expired
// lease. A fenced claim is left alone until grace has passed since its
// fence. It returns the executions it changed.
func (s *Store) Recover(grace time.Duration) ([]ledger.Record, error) {
	if grace < 0 {
		return nil, fmt.Errorf("%w: grace %v is negative", ledger.ErrBadInput, grace)
	}
	if err := ledger.CheckJudge(); err != nil {
		return nil, err
	}
	return s.recoverWhere(grace, `true`)
}

func (s *Store) recoverWhere(grace time.Duration, cond string, args ...any) ([]ledger.Record, error) {
	var out []ledger.Record
	err := s.do(func(ctx context.Context, c *pgx.Conn) error {
		open, serverNow, err := s.openRecords(ctx, c, cond, args...)
		if err != nil {
			return err
		}
		for _, r := range open {
			next, _, err := s.recoverRow(ctx, c, r, grace, serverNow)
			if err != nil {
				return err
			}
			if next.Status != r.Status {
				out = append(out, next)
			}
		}
		return nil
	})
	if missingSchema(err) {
		return nil, nil
	}
	return out, err
}

// RecoverOne judges execution id alone, with no fence grace.
func (s *Store) RecoverOne(id string) (ledger.Record, error) {
	if err := ledger.ValidID(id); err != nil {
		return ledger.Record{}, err
	}
	if err := ledger.CheckJudge(); err != nil {
		return ledger.Record{}, err
	}
	got, err := s.recoverWhere(0, `id = $1`, id)
	if err != nil {
		return ledger.Record{}, err
	}
	if len(got) == 1 {
		return got[0], nil
	}
	return s.Get(id)
}

// RecoverHost declares host dead for good: every claimed or running
// execution its owners hold (by host name; never one whose owner is this
// process's to judge) becomes abandoned or unknown now, lease or not. The
// host this runs on is refused (ErrBadInput).
func (s *Store) RecoverHost(host string) ([]ledger.Record, error) {
	if host == "" {
		return nil, fmt.Errorf("%w: --host needs a host name", ledger.ErrBadInput)
	}
	if me, _ := os.Hostname(); host == me {
		return nil, fmt.Errorf("%w: %s is this host: it is not dead (recover judges its own executions)", ledger.ErrBadInput, host)
	}
	var out []ledger.Record
	err := s.do(func(ctx context.Context, c *pgx.Conn) error {
		open, serverNow, err := s.openRecords(ctx, c, `owner_host = $1`, host)
		if err != nil {
			return err
		}
		at := serverNow
		if t := s.clock(); t != nil {
			at = *t
		}
		for _, r := range open {
			if ledger.IsLocal(r.Owner) {
				continue
			}
			next := r
			ledger.MarkGone(&next, fmt.Sprintf("owner %s is gone (host %s declared dead by ledger recover --host)", r.Owner, host), at)
			got, err := s.markGone(ctx, c, r, next, false)
			if err != nil {
				return err
			}
			if got.Status != r.Status {
				out = append(out, got)
			}
		}
		return nil
	})
	if missingSchema(err) {
		return nil, nil
	}
	return out, err
}
