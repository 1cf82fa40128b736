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

// checkInstant refuses when job's execution for instant blocks a new claim.
// A claimed or running holder whose owner is dead is recovered first.
// Called with the lock held; jobDir is job's directory.
func (s *Store) checkInstant(job string, jobDir dirh, instant time.Time, grace time.Duration) error {
	b, err := readSlot(jobDir, instantKey(instant))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if errors.Is(err, ledger.ErrUnsafeStore) {
		return err
	}
	var holders []string
	tomb := ledger.Status("")
	if err == nil {
		f := strings.Fields(string(b))
		if len(f) >= 1 && len(f) <= 2 && ledger.ValidID(f[0]) == nil {
			holders = f[:1]
			if len(f) == 2 {
				tomb = ledger.Status(f[1])
			}
		} else {
			err = fmt.Errorf("%w: unparsable slot", ledger.ErrCorrupt)
		}
	}
	if err != nil {
		// A garbled slot: fall back to every claim of the job.
		holders, err = s.claimsOf(jobDir, job)
		if err != nil {
			return err
		}
	}
	for _, id := range holders {
		r, err := s.readRecord(id)
		if errors.Is(err, ledger.ErrNotFound) {
			if tomb != "" && ledger.BlocksInstant(tomb) {
				return ledger.Refusedf("execution %s (since pruned) was %s", id, tomb)
			}
			continue // a claim that died before its record was written
		}
		if err != nil {
			return err
		}
		if r.Job != job || !r.Instant.Equal(instant) {
			continue
		}
		if !r.Status.Terminal() {
			r, _, err = s.recoverID(id, grace)
			if err != nil {
				return err
			}
		}
		if ledger.BlocksInstant(r.Status) {
			return ledger.Refusedf("execution %s is %s", r.ID, r.State())
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

// claimsOf returns the ids of every claim in job's log (jd its directory).
func (s *Store) claimsOf(jd dirh, job string) ([]string, error) {
	l, err := openLog(jd, job, false)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer l.Close()
	var ids []string
	_, err = l.Scan(l.First, func(e joblog.Entry) error {
		if e.Kind == joblog.KindClaim {
			ids = append(ids, string(e.ID))
		}
		return nil
	})
	return ids, err
}
