package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/internal/durable"
	"github.com/tether-sh/tether/lib/proc"
)

// DefaultGrace is how long a fenced claim is left alone after its fence
// before recovery may judge its claimer.
const DefaultGrace = 30 * time.Second

// ClaimOptions are the optional parts of a claim.
type ClaimOptions struct {
	// Owner is the claiming process (required), e.g. from LocalOwner.
	Owner Owner
	// Source is free text naming who dispatched the claim (cron, a host...).
	Source string
	// Instant, if not zero, is the scheduled instant: the claim is refused
	// while JOB has an execution for it that is claimed, running, completed
	// or unknown (failed and abandoned may retry). A claimed or running
	// holder whose owner is dead is recovered first, like Exclusive does,
	// so a claimer that crashed before starting does not block a retry.
	// Any time zone; it is stored in UTC.
	Instant time.Time
	// Exclusive refuses the claim while JOB has a claimed or running
	// execution whose owner is alive (or cannot be judged); dead owners of
	// JOB are recovered first.
	Exclusive bool
	// Grace is the recovery grace for fenced claims (0: DefaultGrace).
	Grace time.Duration
	// Child, if set, is the payload of ledger run, forked and held at its
	// gate: the execution is claimed and started in one update, with the
	// child recorded (claimed_at = started_at).
	Child proc.ID
}

// readTries is how many times a record that does not decode is read
// before it is called corrupt.
const readTries = 4

// readRecord reads exec/ID. A missing record is ErrNotFound; one that does
// not parse is ErrCorrupt, naming its file.
//
// A reader without the lock that opened exec/ID just before a writer
// exchanged it with the spare holds the spare's inode, which the next
// update of any record rewrites in place: it may read another record, or
// a mix. Decode's checks (the id first) catch that, and the record is read
// again (its name now holds a complete version); only a record that stays
// undecodable is corrupt.
func (s *Store) readRecord(id string) (Record, error) {
	var err error
	for try := 0; try < readTries; try++ {
		var b []byte
		b, err = readSmall(s.exec, id, maxRecordSize)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return Record{}, fmt.Errorf("%w %s", ErrNotFound, id)
			}
			if errors.Is(err, ErrCorrupt) {
				return Record{}, err
			}
			return Record{}, fmt.Errorf("reading %s: %w", s.exec.Show(id), err)
		}
		var r Record
		if r, err = Decode(b, id); err == nil {
			return r, nil
		}
	}
	return Record{}, fmt.Errorf("%s: %w", s.exec.Show(id), err)
}

// writeRecord durably replaces exec/ID with r.
func (s *Store) writeRecord(r Record) error {
	if err := r.Validate(); err != nil {
		return fmt.Errorf("internal error: refusing to write an illegal record: %w", err)
	}
	if err := s.rep.Replace(s.exec, r.ID, r.encode()); err != nil {
		return fmt.Errorf("writing record %s: %w", r.ID, err)
	}
	return nil
}

// activeName is the active marker of an execution.
func activeName(id, job string) string { return id + "." + job }

// dropActive removes the active marker of a record that became terminal.
// No fsync: a marker resurrected by a crash names a terminal record and is
// dropped again by the next reader.
func (s *Store) dropActive(id, job string) {
	unix.Unlinkat(s.active.FD, activeName(id, job), 0)
}

// now returns the store clock in UTC.
func (s *Store) clock() time.Time { return s.now().UTC() }

// Get returns the execution id.
func (s *Store) Get(id string) (Record, error) {
	if err := ValidID(id); err != nil {
		return Record{}, err
	}
	return s.readRecord(id)
}

// update runs one compare-and-swap transition on record id: fn checks the
// current state and edits r, or returns a refusal.
//
// The new version is computed optimistically before the lock is taken
// (read, decode, transform, encode). Under the lock the record is read
// again; if it is byte-for-byte what the computation was based on, the new
// version is written (replaceFile, which also fsyncs exec/). Otherwise (a
// concurrent writer, a refusal) the transition is redone under the lock.
func (s *Store) update(op, id string, fn func(r *Record, now time.Time) error) (Record, error) {
	if err := ValidID(id); err != nil {
		return Record{}, err
	}
	before, next, data, ok := s.prepare(id, fn)
	unlock, err := s.lock()
	if err != nil {
		return Record{}, err
	}
	defer unlock()
	if ok {
		cur, err := readSmall(s.exec, id, maxRecordSize)
		if err == nil && bytes.Equal(cur, before) {
			if err := s.rep.Replace(s.exec, id, data); err != nil {
				return Record{}, fmt.Errorf("writing record %s: %w", id, err)
			}
			if next.Status.Terminal() {
				s.dropActive(next.ID, next.Job)
			}
			return next, nil
		}
	}
	r, err := s.readRecord(id)
	if err != nil {
		return Record{}, fmt.Errorf("cannot %s %s: %w", op, id, err)
	}
	if err := fn(&r, s.clock()); err != nil {
		return r, fmt.Errorf("cannot %s %s: %w", op, id, err)
	}
	if err := s.writeRecord(r); err != nil {
		return Record{}, err
	}
	if r.Status.Terminal() {
		s.dropActive(r.ID, r.Job)
	}
	return r, nil
}

// prepare reads record id without the lock and computes its transformed
// version. ok is false if anything fails or fn refuses; the caller then
// does the work under the lock.
func (s *Store) prepare(id string, fn func(r *Record, now time.Time) error) (before []byte, next Record, data []byte, ok bool) {
	before, err := readSmall(s.exec, id, maxRecordSize)
	if err != nil {
		return nil, next, nil, false
	}
	next, err = Decode(before, id)
	if err != nil || fn(&next, s.clock()) != nil || next.Validate() != nil {
		return nil, next, nil, false
	}
	return before, next, next.encode(), true
}

// Fence marks a claimed execution as handed off (claimed → claimed+fenced),
// so that only Adopt may start it. Refused from any other state.
func (s *Store) Fence(id string) (Record, error) {
	return s.update("fence", id, func(r *Record, now time.Time) error {
		switch {
		case r.Status == Claimed && r.Fenced:
			return refusedf("execution is claimed and already fenced")
		case r.Status != Claimed:
			return refusedf("execution is %s, not claimed", r.State())
		}
		r.Fenced, r.FencedAt = true, now
		return nil
	})
}

// Adopt hands a fenced claim to owner (claimed+fenced → running). Of any
// number of concurrent adopters exactly one succeeds; the others, and any
// adopter of a claim that is not fenced, are refused.
func (s *Store) Adopt(id string, owner Owner) (Record, error) {
	if owner.PID < 1 {
		return Record{}, badInputf("adopt needs an owner")
	}
	return s.update("adopt", id, func(r *Record, now time.Time) error {
		switch {
		case r.Status == Claimed && !r.Fenced:
			return refusedf("execution is claimed, not fenced")
		case r.Status == Running:
			return refusedf("execution is running: already adopted or started")
		case r.Status != Claimed:
			return refusedf("execution is %s", r.State())
		}
		r.Status, r.Owner, r.StartedAt = Running, owner, now
		return nil
	})
}

// Start starts a claim in-process (claimed → running). The claimer stays
// the owner unless owner is not nil. A fenced claim is refused: it was
// handed off and only its adopter may start it.
func (s *Store) Start(id string, owner *Owner) (Record, error) {
	if owner != nil && owner.PID < 1 {
		return Record{}, badInputf("start needs a valid owner")
	}
	return s.update("start", id, func(r *Record, now time.Time) error {
		switch {
		case r.Status == Claimed && r.Fenced:
			return refusedf("execution is claimed and fenced: it was handed off, only adopt may start it")
		case r.Status != Claimed:
			return refusedf("execution is %s, not claimed", r.State())
		}
		r.Status, r.StartedAt = Running, now
		if owner != nil {
			r.Owner = *owner
		}
		return nil
	})
}

// SetChild records the payload process of a running execution; recovery
// does not judge an execution while that process is alive.
func (s *Store) SetChild(id string, child proc.ID) (Record, error) {
	if child.PID < 1 || child.PID > proc.MaxPID {
		return Record{}, badInputf("child pid %d", child.PID)
	}
	return s.update("record the child of", id, func(r *Record, now time.Time) error {
		if r.Status != Running {
			return refusedf("execution is %s, not running", r.State())
		}
		r.Child = child
		return nil
	})
}

// Finish records a result: running → completed or failed, or claimed (not
// fenced) → failed, for a dispatch that never started. exitCode (0..255)
// and errMsg are optional.
func (s *Store) Finish(id string, status Status, exitCode *int, errMsg string) (Record, error) {
	if status != Completed && status != Failed {
		return Record{}, badInputf("finish status must be completed or failed, not %q", status)
	}
	if exitCode != nil && (*exitCode < 0 || *exitCode > 255) {
		return Record{}, badInputf("exit code %d is not 0..255", *exitCode)
	}
	if len(errMsg) > maxErrorLen {
		return Record{}, badInputf("error message longer than %d bytes", maxErrorLen)
	}
	if exitCode != nil {
		c := *exitCode
		exitCode = &c
	}
	return s.update("finish", id, func(r *Record, now time.Time) error {
		switch {
		case r.Status == Running:
		case r.Status == Claimed && r.Fenced:
			return refusedf("execution is claimed and fenced: its adopter finishes it, or recover abandons it")
		case r.Status == Claimed && status == Completed:
			return refusedf("execution is claimed and never started: it can only finish as failed")
		case r.Status == Claimed:
		default:
			return refusedf("execution is already %s", r.State())
		}
		r.Status, r.FinishedAt, r.ExitCode, r.Error = status, now, exitCode, errMsg
		return nil
	})
}

// Claim records a new execution of job owned by o.Owner and returns it.
func (s *Store) Claim(job string, o ClaimOptions) (Record, error) {
	if err := ValidJob(job); err != nil {
		return Record{}, err
	}
	if o.Owner.PID < 1 || o.Owner.PID > proc.MaxPID {
		return Record{}, badInputf("claim needs an owner")
	}
	if len(o.Source) > maxSourceLen {
		return Record{}, badInputf("source longer than %d bytes", maxSourceLen)
	}
	if !o.Instant.IsZero() {
		o.Instant = o.Instant.UTC()
		if err := checkInstantRange(o.Instant); err != nil {
			return Record{}, badInputf("invalid instant: %v", err)
		}
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	if o.Child.PID < 0 || o.Child.PID > proc.MaxPID {
		return Record{}, badInputf("child pid %d", o.Child.PID)
	}
	unlock, err := s.lock()
	if err != nil {
		return Record{}, err
	}
	defer unlock()

	newJob := false
	if err := unix.Mkdirat(s.jobs.FD, job, 0o700); err == nil {
		newJob = true
	} else if !errors.Is(err, unix.EEXIST) {
		return Record{}, fmt.Errorf("cannot claim %s: creating %s: %w", job, s.jobs.Show(job), err)
	}
	jobDir, err := openSubdir(s.jobs, job)
	if err != nil {
		return Record{}, fmt.Errorf("cannot claim %s: %w", job, err)
	}
	defer unix.Close(jobDir.FD)
	if newJob {
		unix.Fchmod(jobDir.FD, 0o700) // the umask may have cleared bits
	}

	if !o.Instant.IsZero() {
		if err := s.checkInstant(job, jobDir, o.Instant, o.Grace); err != nil {
			return Record{}, fmt.Errorf("cannot claim %s for %s: %w", job, FormatTime(o.Instant), err)
		}
	}
	if o.Exclusive {
		if err := s.checkExclusive(job, o.Grace); err != nil {
			return Record{}, fmt.Errorf("cannot claim %s exclusively: %w", job, err)
		}
	}

	now := s.clock()
	r := Record{
		ID: NewID(now), Job: job, Source: o.Source, Instant: o.Instant,
		Status: Claimed, Owner: o.Owner, ClaimedAt: now,
	}
	if o.Child.PID != 0 {
		r.Status, r.StartedAt, r.Child = Running, now, o.Child
	}
	fail := func(err error) (Record, error) {
		return Record{}, fmt.Errorf("cannot claim %s: %w", job, err)
	}
	// The record's first version is written and made durable under a
	// temporary name; its index entries are made durable next (the markers
	// are hard links to that file, so they cost no inode), and only then is
	// the record renamed into place: see "Crash safety".
	if err := r.Validate(); err != nil {
		return fail(fmt.Errorf("internal error: refusing to write an illegal record: %w", err))
	}
	rec, fd, err := durable.StageOpen(s.exec, r.ID, r.encode())
	if err != nil {
		return fail(err)
	}
	abort := func(err error) (Record, error) {
		unix.Close(fd)
		rec.Abort()
		return fail(err)
	}
	if err := linkMarker(rec, jobDir, r.ID); err != nil {
		return abort(err)
	}
	if err := linkMarker(rec, s.active, activeName(r.ID, job)); err != nil {
		return abort(err)
	}
	head, _ := s.latestIn(jobDir)
	reached("claim-linked")
	// The record's data, the job's index and the active marker are made
	// durable at once: they are independent of each other (only the rename
	// below must follow all three), and on a journalling file system the
	// concurrent flushes share one commit.
	var wg sync.WaitGroup
	var jobErr, activeErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		if !o.Instant.IsZero() {
			if jobErr = durable.Write(jobDir, instantKey(o.Instant), []byte(r.ID+"\n"), true); jobErr != nil {
				return
			}
		}
		// Through the job's spare, like a record: a new _latest inode per
		// claim, and the old one's deletion, would make the file system
		// search ever longer past recently deleted inodes (ext4 without a
		// journal). It fsyncs jobDir, the markers' and the key's too.
		jobErr = s.rep.Replace(jobDir, latestName, []byte(r.ID+" "+head+"\n"))
	}()
	go func() {
		defer wg.Done()
		if activeErr = s.active.Sync(); activeErr == nil && newJob {
			activeErr = s.jobs.Sync()
		}
	}()
	dataErr := durable.Fdatasync(fd)
	if dataErr != nil {
		dataErr = &os.PathError{Op: "fdatasync", Path: s.exec.Show(rec.Temp), Err: dataErr}
	}
	wg.Wait()
	if err := errors.Join(dataErr, jobErr, activeErr); err != nil {
		return abort(err)
	}
	if err := unix.Close(fd); err != nil {
		rec.Abort()
		return fail(&os.PathError{Op: "close", Path: s.exec.Show(rec.Temp), Err: err})
	}
	reached("claim-synced")
	if err := rec.Commit(); err != nil {
		return fail(err)
	}
	if err := s.exec.Sync(); err != nil {
		return fail(err)
	}
	return r, nil
}

// blocksInstant reports whether an execution in status st keeps its
// instant from being claimed again (failed and abandoned may retry).
func blocksInstant(st Status) bool {
	return st == Claimed || st == Running || st == Completed || st == Unknown
}

// checkInstant refuses when job's execution for instant blocks a new claim.
// A claimed or running holder whose owner is dead is recovered first.
// Called with the lock held; jobDir is job's directory.
func (s *Store) checkInstant(job string, jobDir dirh, instant time.Time, grace time.Duration) error {
	b, err := readSmall(jobDir, instantKey(instant), 256)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if errors.Is(err, ErrUnsafeStore) {
		return err
	}
	var holders []string
	tomb := Status("")
	if err == nil {
		f := strings.Fields(string(b))
		if len(f) >= 1 && len(f) <= 2 && ValidID(f[0]) == nil {
			holders = f[:1]
			if len(f) == 2 {
				tomb = Status(f[1])
			}
		} else {
			err = fmt.Errorf("%w: unparsable slot", ErrCorrupt)
		}
	}
	if err != nil {
		// A garbled slot: fall back to every execution of the job.
		holders, err = jobIDsIn(jobDir)
		if err != nil {
			return err
		}
	}
	for _, id := range holders {
		r, err := s.readRecord(id)
		if errors.Is(err, ErrNotFound) {
			if tomb != "" && blocksInstant(tomb) {
				return refusedf("execution %s (since pruned) was %s", id, tomb)
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
			r, _, err = s.recoverOne(r, grace)
			if err != nil {
				return err
			}
		}
		if blocksInstant(r.Status) {
			return refusedf("execution %s is %s", r.ID, r.State())
		}
	}
	return nil
}

// checkExclusive refuses while job has a claimed or running execution whose
// owner is alive or cannot be judged; dead owners are recovered first.
// Called with the lock held.
func (s *Store) checkExclusive(job string, grace time.Duration) error {
	return s.scanActive(func(id, j string) error {
		if j != job {
			return nil
		}
		r, err := s.readRecord(id)
		if errors.Is(err, ErrNotFound) {
			s.dropActive(id, j)
			return nil
		}
		if err != nil {
			return err
		}
		r, why, err := s.recoverOne(r, grace)
		if err != nil {
			return err
		}
		if !r.Status.Terminal() {
			return refusedf("execution %s is %s and %s", r.ID, r.State(), why)
		}
		return nil
	})
}

// scanActive calls fn for every active marker (id, job), in id order.
// Called with the lock held.
func (s *Store) scanActive(fn func(id, job string) error) error {
	names, err := readNames(s.active)
	if err != nil {
		return err
	}
	for _, n := range names {
		id, job, ok := strings.Cut(n, ".")
		if !ok || ValidID(id) != nil || ValidJob(job) != nil {
			continue
		}
		if err := fn(id, job); err != nil {
			return err
		}
	}
	return nil
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

// jobIDs returns the ids of job's membership markers, oldest first. A job
// that was never claimed has none.
func (s *Store) jobIDs(job string) ([]string, error) {
	jd, err := openSubdir(s.jobs, job)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer unix.Close(jd.FD)
	return jobIDsIn(jd)
}

// jobIDsIn is jobIDs for the job directory jd.
func jobIDsIn(jd dirh) ([]string, error) {
	names, err := readNames(jd)
	if err != nil {
		return nil, err
	}
	return validIDs(names), nil
}

// validIDs keeps the names that are execution ids, dropping index and
// temporary files; it reuses names' storage.
func validIDs(names []string) []string {
	ids := names[:0]
	for _, n := range names {
		if ValidID(n) == nil {
			ids = append(ids, n)
		}
	}
	return ids
}
