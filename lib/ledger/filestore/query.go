package filestore

import (
	"errors"
	"fmt"
	"os"

	"github.com/tether-sh/tether/lib/ledger"
)

// readTries is how many times a record that does not decode is read
// before it is called corrupt.
const readTries = 4

// readRecord reads exec/ID. A missing record is ledger.ErrNotFound; one that does
// not parse is ledger.ErrCorrupt, naming its file.
//
// A reader without the lock that opened exec/ID just before a writer
// exchanged it with the spare holds the spare's inode, which the next
// update of any record rewrites in place: it may read another record, or
// a mix. ledger.Decode's checks (the id first) catch that, and the record is read
// again (its name now holds a complete version); only a record that stays
// undecodable is corrupt.
func (s *Store) readRecord(id string) (ledger.Record, error) {
	var err error
	for try := 0; try < readTries; try++ {
		var b []byte
		b, err = readSmall(s.exec, id, ledger.MaxRecordSize)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return ledger.Record{}, fmt.Errorf("%w %s", ledger.ErrNotFound, id)
			}
			if errors.Is(err, ledger.ErrCorrupt) {
				return ledger.Record{}, err
			}
			return ledger.Record{}, fmt.Errorf("reading %s: %w", s.exec.Show(id), err)
		}
		var r ledger.Record
		if r, err = ledger.Decode(b, id); err == nil {
			return r, nil
		}
	}
	return ledger.Record{}, fmt.Errorf("%s: %w", s.exec.Show(id), err)
}

// Get returns the execution id.
func (s *Store) Get(id string) (ledger.Record, error) {
	if err := ledger.ValidID(id); err != nil {
		return ledger.Record{}, err
	}
	return s.readRecord(id)
}

// Latest returns job's newest execution (the last one claimed). It reads
// the job's _latest pointer and at most two records; only a pointer left
// garbled or dangling by a crash or an interrupted prune costs a read of the
// job's directory.
func (s *Store) Latest(job string) (ledger.Record, error) {
	if err := ledger.ValidJob(job); err != nil {
		return ledger.Record{}, err
	}
	try := func(id string) (ledger.Record, bool, error) {
		r, err := s.readRecord(id)
		if errors.Is(err, ledger.ErrNotFound) {
			return ledger.Record{}, false, nil
		}
		if err != nil {
			return ledger.Record{}, false, err
		}
		return r, r.Job == job, nil
	}
	head, prev, ok, err := s.pointer(job)
	if err != nil {
		return ledger.Record{}, err
	}
	if ok {
		r, found, err := try(head)
		if found || err != nil {
			return r, err
		}
		if prev != "" {
			if r, found, err = try(prev); found || err != nil {
				return r, err
			}
		}
	}
	ids, err := s.jobIDs(job)
	if err != nil {
		return ledger.Record{}, err
	}
	for i := len(ids) - 1; i >= 0; i-- {
		r, found, err := try(ids[i])
		if found || err != nil {
			return r, err
		}
	}
	return ledger.Record{}, ledger.Kindf(ledger.ErrNotFound, "job %s has no execution", job)
}

// Each calls fn with each execution matching f, oldest first, reading
// one record at a time: what it holds besides is the names of the
// directory it walks (exec/, the job's, or active/). Records that cannot
// be read are passed over and reported together after the others
// (wrapping ledger.ErrCorrupt).
func (s *Store) Each(f ledger.Filter, fn func(ledger.Record) error) error {
	if f.Job != "" {
		if err := ledger.ValidJob(f.Job); err != nil {
			return err
		}
	}
	if f.Status != "" && !f.Status.Valid() {
		_, err := ledger.ParseStatus(string(f.Status))
		return err
	}
	if f.Status == ledger.Claimed || f.Status == ledger.Running {
		return s.eachActive(f, fn)
	}
	var ids []string
	var err error
	if f.Job != "" {
		ids, err = s.jobIDs(f.Job)
	} else {
		ids, err = s.execIDs()
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range ids {
		r, err := s.readRecord(id)
		if errors.Is(err, ledger.ErrNotFound) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if (f.Job == "" || r.Job == f.Job) && (f.Status == "" || r.Status == f.Status) {
			if err := fn(r); err != nil {
				return err
			}
		}
	}
	return errors.Join(errs...)
}

// eachActive is Each for a status that is not terminal: every such
// execution has an active marker (made before its record), so only
// active/ is read, whatever the store holds.
func (s *Store) eachActive(f ledger.Filter, fn func(ledger.Record) error) error {
	var errs []error
	var fnErr error
	err := s.scanActive(func(id, job string) error {
		if f.Job != "" && job != f.Job {
			return nil
		}
		r, err := s.readRecord(id)
		switch {
		case errors.Is(err, ledger.ErrNotFound):
		case err != nil:
			errs = append(errs, err)
		case r.Job == job && r.Status == f.Status:
			fnErr = fn(r)
			return fnErr
		}
		return nil
	})
	if fnErr != nil {
		return fnErr
	}
	return errors.Join(append(errs, err)...)
}
