package filestore

import (
	"errors"

	"fmt"
	"golang.org/x/sys/unix"
	"os"
	"strings"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/filestore/joblog"
)

// The slot of a claim's scheduled instant in its job's directory
// (jobs/JOB/@INSTANT) and the check a claim makes against it.

// instantKey is the file-name form of an instant in a job's directory:
// fixed width, sortable, and free of ":" so it is portable.
func instantKey(t time.Time) string {
	return "@" + t.UTC().Format("20060102T150405.000000000Z")
}

// checkInstant refuses when job's execution for o.Instant blocks the claim
// o (ledger.BlocksSlot).
// A claimed or running holder whose owner is dead is recovered first.
// Called with the lock held; jobDir is job's directory.
//
// The slot is the fast answer, not the only trace: where it is missing,
// garbled, names no execution the store holds, or names one of another
// slot, the job's log is asked too (instantInLog), and an execution of
// the log that holds the slot is damage the slot did not show (removed,
// overwritten or restored without it): the claim is refused, never
// granted on the slot's silence.
func (s *Store) checkInstant(job string, jobDir dirh, o ledger.ClaimOptions) error {
	instant := o.Instant
	key := instantKey(instant)
	b, err := readSlot(jobDir, key)
	if errors.Is(err, os.ErrNotExist) {
		return s.instantInLog(job, jobDir, o, jobDir.Show(key)+" is missing")
	}
	if errors.Is(err, ledger.ErrUnsafeStore) {
		return err
	}
	f := strings.Fields(string(b))
	if err != nil || len(f) < 1 || len(f) > 2 || ledger.ValidID(f[0]) != nil {
		return s.instantInLog(job, jobDir, o, fmt.Sprintf("%s is not a slot (%q)", jobDir.Show(key), b))
	}
	id := f[0]
	r, err := s.readRecord(id)
	if errors.Is(err, ledger.ErrNotFound) {
		if len(f) == 2 && ledger.BlocksInstant(ledger.Status(f[1])) {
			return ledger.Refusedf("execution %s (since pruned) was %s", id, f[1])
		}
		// A claim that died before its frame, or a slot naming what the
		// log lost.
		return s.instantInLog(job, jobDir, o, fmt.Sprintf("%s names execution %s, which the store does not hold", jobDir.Show(key), id))
	}
	if err != nil {
		return err
	}
	if r.Job != job || !r.Instant.Equal(instant) {
		return s.instantInLog(job, jobDir, o, fmt.Sprintf("%s names execution %s, which holds another slot", jobDir.Show(key), id))
	}
	return s.blocks(r, o, "")
}

// blocks refuses while r, the execution holding a slot, blocks the claim
// o of it (ledger.BlocksSlot; a live one whose owner is dead is recovered
// first); why, when set, is the damage that hid it from its slot:
// ErrCorrupt, not a refusal.
func (s *Store) blocks(r ledger.Record, o ledger.ClaimOptions, why string) error {
	if !r.Status.Terminal() {
		var err error
		if r, _, err = s.recoverID(r.ID, o.Grace); err != nil {
			return err
		}
	}
	if !ledger.BlocksSlot(r, o) {
		return nil
	}
	if why != "" {
		return damagef("%s, but the log's execution %s holds that slot and is %s (run ledger verify)", why, r.ID, r.State())
	}
	return ledger.Refusedf("execution %s is %s", r.ID, r.State())
}

// instantInLog refuses a claim of instant whose slot did not answer (why)
// when job's log holds an execution of it that blocks the claim. Where
// the instant is after every instant the log holds a claim of (its cached
// summary's last and the claims after it) that is known without a walk:
// a new instant, the common case; else the log's claims are walked.
func (s *Store) instantInLog(job string, jd dirh, o ledger.ClaimOptions, why string) error {
	instant := o.Instant
	l, err := openLog(jd, job, false)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer l.Close()
	js, _, err := counted(jd, l, job)
	if err != nil {
		return err
	}
	if instant.After(js.lastInstant) {
		return nil
	}
	var ids []string
	if _, err := l.Scan(l.First, func(e joblog.Entry) error {
		if t, ok := claimInstant(e.Data); ok && e.Kind == joblog.KindClaim && t.Equal(instant) {
			ids = append(ids, string(e.ID))
		}
		return nil
	}); err != nil {
		return err
	}
	for _, id := range ids {
		r, err := s.readRecord(id)
		if err != nil {
			return err
		}
		if err := s.blocks(r, o, why); err != nil {
			return err
		}
	}
	return nil
}

// readSlot reads the slot name in the job directory jd: a symbolic link
// whose target is "ID" or "ID STATUS" (a tombstone). A missing slot is
// os.ErrNotExist.
func readSlot(jd dirh, name string) ([]byte, error) {
	buf := make([]byte, 128)
	n, err := unix.Readlinkat(jd.FD, name, buf)
	switch err {
	case nil:
		return buf[:n], nil
	case unix.EINVAL:
		return nil, fmt.Errorf("%w: %s is not a symbolic link", ledger.ErrCorrupt, jd.Show(name))
	case unix.ENOENT:
		return nil, &os.PathError{Op: "readlink", Path: jd.Show(name), Err: os.ErrNotExist}
	}
	return nil, &os.PathError{Op: "readlink", Path: jd.Show(name), Err: err}
}
