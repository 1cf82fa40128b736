package filestore

import (
	"errors"
	"fmt"
	"os"
	"sort"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/filestore/joblog"
)

// The store's indexes: the links of live executions in active/, and the
// newest claim of a job, found from the end of its log.

// scanActive calls fn for every link in active/ (id, and the job its
// target names), in id order: every execution that may still be claimed
// or running, and rarely one that has just become terminal. While the
// links may not be whole (linked.go), the live executions of the logs
// are added to them. A link that names no job is ErrCorrupt, returned
// once fn has seen every other.
func (s *Store) scanActive(fn func(id, job string) error) error {
	names, err := readNames(s.active)
	if err != nil {
		return err
	}
	var live map[string]string
	var liveErr error
	if !s.linksWhole() {
		live, liveErr = s.liveInLogs()
		for _, n := range names {
			delete(live, n)
		}
		for id := range live {
			names = append(names, id)
		}
		sort.Strings(names)
	}
	buf := make([]byte, 256)
	var damaged []error
	for _, n := range names {
		if job, ok := live[n]; ok {
			if err := fn(n, job); err != nil {
				return err
			}
			continue
		}
		if ledger.ValidID(n) != nil {
			continue
		}
		k, err := unix.Readlinkat(s.active.FD, n, buf)
		if errors.Is(err, unix.ENOENT) {
			continue // it ended meanwhile
		}
		job, ok := "", false
		if err == nil {
			_, _, job, ok = parseHint(string(buf[:k]))
		}
		if !ok {
			// A live execution of no known job (tampering, a damaged
			// disk: no crash leaves one): said after the others, never
			// passed over, which would let an --exclusive claim of its
			// job through, or leave it unrecovered without a word.
			damaged = append(damaged, fmt.Errorf("%w: %s: bad link", ledger.ErrCorrupt, s.active.Show(n)))
			continue
		}
		if err := fn(n, job); err != nil {
			return err
		}
	}
	return errors.Join(append([]error{liveErr}, damaged...)...)
}

// readNames returns the names in d, sorted.
func readNames(d dirh) ([]string, error) {
	if readNamesHook != nil {
		readNamesHook(d.Path)
	}
	f, err := openListing(d)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", d.Path, err)
	}
	sort.Strings(names)
	return names, nil
}

// jobNames returns the names of the jobs in the store, sorted.
func (s *Store) jobNames() ([]string, error) {
	return readJobNames(s.jobs)
}

// jobsFor returns the names of the jobs in the store in the order to
// search them for execution id: first those id ends with the hint of
// (ledger.IDHints), where every id ledger.NewID made is, then the rest;
// each part sorted.
func (s *Store) jobsFor(id string) ([]string, error) {
	jobs, err := s.jobNames()
	if err != nil {
		return nil, err
	}
	ordered := make([]string, 0, len(jobs))
	for _, hinted := range []bool{true, false} {
		for _, job := range jobs {
			if ledger.IDHints(id, job) == hinted {
				ordered = append(ordered, job)
			}
		}
	}
	return ordered, nil
}

// newestIn returns the id of the newest claim in l ("" if none) and its
// frame's offset: the last claim frame, found walking back from the end
// (forward from the start when a frame on the way back is not valid).
func newestIn(l *jobLog) (string, int64, error) {
	end := l.End
	var st unix.Stat_t
	if err := unix.Fstat(l.FD(), &st); err == nil {
		end = st.Size
	}
	for end > l.First {
		e, err := l.LastBefore(end)
		if err != nil {
			break
		}
		if e.Kind == joblog.KindClaim {
			return string(e.ID), e.Off, nil
		}
		end = e.Off
	}
	if end <= l.First {
		return "", 0, nil
	}
	newest, at := "", int64(0)
	_, err := l.Scan(l.First, func(e joblog.Entry) error {
		if e.Kind == joblog.KindClaim {
			newest, at = string(e.ID), e.Off
		}
		return nil
	})
	return newest, at, err
}

// openJob opens job's directory and log for reading; ok is false when the
// job has none.
func (s *Store) openJob(job string) (jd dirh, l *jobLog, ok bool, err error) {
	return s.openJobLent(job, nil)
}

// openJobLent is openJob, its log reading through lend's buffers.
func (s *Store) openJobLent(job string, lend *joblog.Lender) (jd dirh, l *jobLog, ok bool, err error) {
	jd, err = openSubdir(s.jobs, job)
	if errors.Is(err, os.ErrNotExist) {
		return jd, nil, false, nil
	}
	if err != nil {
		return jd, nil, false, err
	}
	l, err = openLogLent(jd, job, false, lend)
	if errors.Is(err, os.ErrNotExist) {
		unix.Close(jd.FD)
		return jd, nil, false, nil
	}
	if err != nil {
		unix.Close(jd.FD)
		return jd, nil, false, err
	}
	return jd, l, true, nil
}

// Latest returns job's newest execution (the last one claimed): the last
// claim frame of its log, and that execution's newest version.
func (s *Store) Latest(job string) (ledger.Record, error) {
	if err := ledger.ValidJob(job); err != nil {
		return ledger.Record{}, err
	}
	jd, l, ok, err := s.openJob(job)
	if err != nil {
		return ledger.Record{}, err
	}
	if !ok {
		return ledger.Record{}, ledger.Kindf(ledger.ErrNotFound, "job %s has no execution", job)
	}
	defer unix.Close(jd.FD)
	defer l.Close()
	return s.latestIn(job, l)
}

// latestIn is Latest reading job's log l, which stays open.
func (s *Store) latestIn(job string, l *jobLog) (ledger.Record, error) {
	id, off, err := newestIn(l)
	if err != nil {
		return ledger.Record{}, err
	}
	if id == "" {
		return ledger.Record{}, ledger.Kindf(ledger.ErrNotFound, "job %s has no execution", job)
	}
	loc := &located{job: job, jd: dirh{FD: -1}, log: l}
	if err := loc.find(id, l.Gen, off); err != nil {
		return ledger.Record{}, err
	}
	return loc.rec, nil
}

// Get returns the execution id.
func (s *Store) Get(id string) (ledger.Record, error) {
	if err := ledger.ValidID(id); err != nil {
		return ledger.Record{}, err
	}
	return s.readRecord(id)
}

// Holds returns execution id and whether it still holds its job
// (ledger.HoldVerdict): the job's greatest token is its log's
// (lastToken), the clock this host's.
func (s *Store) Holds(id string) (ledger.Record, error) {
	r, err := s.Get(id)
	if err != nil || r.Status.Terminal() {
		if err == nil {
			err = ledger.HoldVerdict(r, r.Token, s.clock())
		}
		return r, err
	}
	newest := r.Token
	jd, l, ok, err := s.openJob(r.Job)
	if err != nil {
		return r, err
	}
	if ok {
		defer unix.Close(jd.FD)
		defer l.Close()
		tok, err := l.lastToken()
		if err != nil {
			return r, err
		}
		newest = max(newest, tok)
	}
	return r, ledger.HoldVerdict(r, newest, s.clock())
}
