package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Summaries returns the summary of each named job (every job when none
// is named), ordered by job name.
func (s *Store) Summaries(jobs ...string) ([]Summary, error) {
	for _, j := range jobs {
		if err := ValidJob(j); err != nil {
			return nil, err
		}
	}
	if len(jobs) == 0 {
		names, err := readNames(s.jobs)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			if ValidJob(n) == nil {
				jobs = append(jobs, n)
			}
		}
	} else {
		jobs = append([]string(nil), jobs...)
		sort.Strings(jobs)
		jobs = dedupSorted(jobs)
	}
	live, err := s.liveByJob()
	if err != nil {
		return nil, err
	}
	out := make([]Summary, 0, len(jobs))
	var errs []error
	for _, j := range jobs {
		sum, err := s.summary(j, live[j])
		if err != nil {
			errs = append(errs, err)
		}
		out = append(out, sum)
	}
	return out, errors.Join(errs...)
}

func dedupSorted(a []string) []string {
	out := a[:0]
	for i, v := range a {
		if i == 0 || v != a[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// newerFinish reports whether r finished after than (ID "": never), the
// id breaking ties.
func newerFinish(r, than Record) bool {
	if than.ID == "" {
		return true
	}
	if !r.FinishedAt.Equal(than.FinishedAt) {
		return r.FinishedAt.After(than.FinishedAt)
	}
	return r.ID > than.ID
}

// A job's summary is kept in jobs/JOB/_summary, rewritten (durably,
// through the job directory's spare, like _latest) when executions that
// became terminal are settled, after their records were made durable:
//
//	tether-summary 1
//	runs STATUS N ...          executions that became terminal, by status
//	counted ID ...             the last few counted (newest last)
//	finished RECORD            the one that became terminal last
//	success RECORD             the Completed one that finished last
//
// The records are copies (the stored form, one line each), so that prune
// loses neither them nor the counts. A finish writes its record only and
// leaves the execution's active marker, now naming a terminal record that
// "counted" does not list; readers count such records in what they
// return. They are settled — counted into the summary, and then their
// markers dropped — by whoever next goes through the job's markers under
// the lock (recover, claim --exclusive/--every, prune), or by a finish
// that leaves the job more than settleAfter markers. A writer killed
// between the summary and the markers leaves markers of records that
// "counted" lists (it keeps at least the last batch), which are dropped
// without counting them again.
// Latest comes from _latest and Live from active/, which are kept as
// before, so claims do not write the summary.
//
// A store made before summaries existed has no summary file and no
// "summaries" file at its root: Open (migrate) writes every job's
// summary from the records it holds, under the lock, and then creates
// that file; a crash before it redoes the migration.
const (
	summaryName   = "_summary"
	summaryMagic  = "tether-summary 1"
	summariesMark = "summaries"
	// maxCounted bounds the ids "counted" keeps: more than the finishes
	// whose active markers can still be left behind.
	maxCounted     = 32
	maxSummarySize = 4*maxRecordSize + 4096
)

// jobSummary is the stored part of a summary.
type jobSummary struct {
	runs     map[Status]uint64
	counted  []string
	finished Record
	success  Record
}

func (js *jobSummary) hasCounted(id string) bool {
	for _, c := range js.counted {
		if c == id {
			return true
		}
	}
	return false
}

// count adds terminal record r, unless already counted.
func (js *jobSummary) count(r Record) bool {
	if js.hasCounted(r.ID) {
		return false
	}
	if js.runs == nil {
		js.runs = map[Status]uint64{}
	}
	js.runs[r.Status]++
	js.counted = append(js.counted, r.ID)
	if newerFinish(r, js.finished) {
		js.finished = r
	}
	if r.Status == Completed && newerFinish(r, js.success) {
		js.success = r
	}
	return true
}

// trimCounted keeps the newest keep ids of counted.
func (js *jobSummary) trimCounted(keep int) {
	if len(js.counted) > keep {
		js.counted = js.counted[len(js.counted)-keep:]
	}
}

func (js *jobSummary) encode() []byte {
	var b bytes.Buffer
	b.WriteString(summaryMagic + "\nruns")
	for _, st := range Statuses {
		if n := js.runs[st]; n > 0 {
			fmt.Fprintf(&b, " %s %d", st, n)
		}
	}
	b.WriteString("\ncounted")
	for _, id := range js.counted {
		b.WriteString(" " + id)
	}
	b.WriteString("\n")
	if js.finished.ID != "" {
		b.WriteString("finished ")
		b.Write(js.finished.encode())
	}
	if js.success.ID != "" {
		b.WriteString("success ")
		b.Write(js.success.encode())
	}
	return b.Bytes()
}

func decodeSummary(b []byte, job string) (jobSummary, error) {
	var js jobSummary
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) < 3 || lines[0] != summaryMagic {
		return js, fmt.Errorf("%w: not a job summary", ErrCorrupt)
	}
	f := strings.Fields(lines[1])
	if len(f) == 0 || f[0] != "runs" || len(f)%2 != 1 {
		return js, fmt.Errorf("%w: summary: bad runs line", ErrCorrupt)
	}
	js.runs = map[Status]uint64{}
	for i := 1; i < len(f); i += 2 {
		n, err := strconv.ParseUint(f[i+1], 10, 64)
		if err != nil || !Status(f[i]).Terminal() {
			return js, fmt.Errorf("%w: summary: bad count %s %s", ErrCorrupt, f[i], f[i+1])
		}
		js.runs[Status(f[i])] = n
	}
	f = strings.Fields(lines[2])
	if len(f) == 0 || f[0] != "counted" {
		return js, fmt.Errorf("%w: summary: bad counted line", ErrCorrupt)
	}
	for _, id := range f[1:] {
		if ValidID(id) != nil {
			return js, fmt.Errorf("%w: summary: bad id %q", ErrCorrupt, id)
		}
	}
	js.counted = f[1:]
	for _, l := range lines[3:] {
		k, v, _ := strings.Cut(l, " ")
		r, err := Decode([]byte(v), "")
		if err != nil {
			return js, fmt.Errorf("summary: %w", err)
		}
		if r.Job != job || !r.Status.Terminal() {
			return js, fmt.Errorf("%w: summary: %s is not a finished execution of %s", ErrCorrupt, k, job)
		}
		switch {
		case k == "finished":
			js.finished = r
		case k == "success" && r.Status == Completed:
			js.success = r
		default:
			return js, fmt.Errorf("%w: summary: bad line %q", ErrCorrupt, k)
		}
	}
	return js, nil
}

// readSummary reads the summary in the job directory jd (none: zero).
func readSummary(jd dirh, job string) (jobSummary, error) {
	b, err := readSmall(jd, summaryName, maxSummarySize)
	if errors.Is(err, os.ErrNotExist) {
		return jobSummary{}, nil
	}
	if err != nil {
		return jobSummary{}, err
	}
	js, err := decodeSummary(b, job)
	if err != nil {
		return jobSummary{}, fmt.Errorf("%s: %w", jd.Show(summaryName), err)
	}
	return js, nil
}

// liveByJob returns the live records of every job, oldest first, from the
// active markers (terminal ones, left by a writer killed before it
// settled them, are returned too: the caller counts them if the summary
// does not).
func (s *Store) liveByJob() (map[string][]Record, error) {
	out := map[string][]Record{}
	err := s.scanActive(func(id, job string) error {
		r, err := s.readRecord(id)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if r.Job == job {
			out[job] = append(out[job], r)
		}
		return nil
	})
	return out, err
}

// summary returns job's summary: its stored part, Latest, and active
// records (as liveByJob found them).
func (s *Store) summary(job string, active []Record) (Summary, error) {
	sum := Summary{Job: job}
	jd, err := openSubdir(s.jobs, job)
	if errors.Is(err, os.ErrNotExist) {
		return sum, nil
	}
	if err != nil {
		return sum, err
	}
	defer unix.Close(jd.FD)
	var js jobSummary
	if s.unmigrated {
		js, err = s.countHeld(job)
	} else {
		js, err = readSummary(jd, job)
	}
	if err != nil {
		return sum, err
	}
	for _, r := range active {
		if r.Status.Terminal() {
			js.count(r)
		} else {
			sum.Live++
		}
	}
	sum.LastFinished, sum.LastSuccess = js.finished, js.success
	for st, n := range js.runs {
		if sum.Runs == nil {
			sum.Runs = map[Status]uint64{}
		}
		sum.Runs[st] = n
	}
	if r, err := s.Latest(job); err == nil {
		sum.Latest = r
	} else if !errors.Is(err, ErrNotFound) {
		return sum, err
	}
	return sum, nil
}

// settleAfter is how many active markers a job may have before a finish
// settles its terminal ones: below it, a finish writes its record alone,
// and its marker, now naming a terminal record, waits for the next
// settle, counted by readers meanwhile.
const settleAfter = 8

// maybeSettle settles job's finished executions once it has more than
// settleAfter active markers. Called with the lock held, after a finish;
// failing, it leaves the markers for the next settle.
func (s *Store) maybeSettle(job string) {
	names, err := readNames(s.active)
	if err != nil {
		return
	}
	var ids []string
	for _, n := range names {
		if id, j, ok := strings.Cut(n, "."); ok && j == job && ValidID(id) == nil {
			ids = append(ids, id)
		}
	}
	if len(ids) <= settleAfter {
		return
	}
	var done []Record
	for _, id := range ids {
		if r, err := s.readRecord(id); err == nil && r.Job == job && r.Status.Terminal() {
			done = append(done, r)
		}
	}
	s.settle(job, done)
}

// settleAll settles the terminal records in done, job by job.
func (s *Store) settleAll(done []Record) error {
	byJob := map[string][]Record{}
	for _, r := range done {
		byJob[r.Job] = append(byJob[r.Job], r)
	}
	var errs []error
	for job, recs := range byJob {
		if err := s.settle(job, recs); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// settle counts done, terminal records of job still marked active, into
// its summary (those not counted already), durably, and then drops their
// markers. Called with the lock held, after they were made durable. If
// the summary cannot be written the markers stay, for the next settle.
func (s *Store) settle(job string, done []Record) error {
	if len(done) == 0 {
		return nil
	}
	jd, err := openSubdir(s.jobs, job)
	if err != nil {
		return fmt.Errorf("summary of %s: %w", job, err)
	}
	defer unix.Close(jd.FD)
	js, err := readSummary(jd, job)
	changed := false
	if err != nil {
		// A damaged summary is rebuilt from the records, done among them
		// (counts of pruned executions are lost with it).
		if js, err = s.rebuildSummary(job); err != nil {
			return err
		}
		changed = true
	} else {
		for _, r := range done {
			if js.count(r) {
				changed = true
			}
		}
	}
	if changed {
		// "counted" keeps at least this whole batch: its markers go next.
		js.trimCounted(max(maxCounted, len(done)))
		reached("settle")
		if err := s.rep.Replace(jd, summaryName, js.encode()); err != nil {
			return fmt.Errorf("summary of %s: %w", job, err)
		}
	}
	for _, r := range done {
		s.dropActive(r.ID, job)
	}
	return nil
}

// countHeld computes job's summary from the records it holds, changing
// nothing.
func (s *Store) countHeld(job string) (jobSummary, error) {
	var js jobSummary
	recs, err := s.List(Filter{Job: job})
	for _, r := range recs {
		if r.Status.Terminal() {
			js.count(r)
		}
	}
	return js, err
}

// rebuildSummary computes job's summary from the records it holds and
// drops the active markers of its terminal ones, which it counted. Called
// with the lock held.
func (s *Store) rebuildSummary(job string) (jobSummary, error) {
	var js jobSummary
	recs, err := s.List(Filter{Job: job})
	if err != nil {
		return js, err
	}
	for _, r := range recs {
		if r.Status.Terminal() {
			js.count(r)
		}
	}
	err = s.scanActive(func(id, j string) error {
		if j == job {
			if r, err := s.readRecord(id); err == nil && r.Status.Terminal() {
				s.dropActive(id, j)
			}
		}
		return nil
	})
	return js, err
}

// migrateSummaries writes the summary of every job of a store made before
// summaries existed, then marks the store as having them. Called by Open.
// A store that cannot be written (a read-only mount, a snapshot), or that
// root reads as its owner, stays as it is, and its summaries are computed
// from its records when read.
func (s *Store) migrateSummaries() error {
	var st unix.Stat_t
	if err := unix.Fstatat(s.root.FD, summariesMark, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		return nil
	}
	if os.Getuid() != os.Geteuid() || s.foreign {
		// Root reading another user's store as that user (ReadAsOwner),
		// or a reader in the owner's group (checkReader), writes nothing.
		s.unmigrated = true
		return nil
	}
	if err := s.migrate(); err != nil {
		if errors.Is(err, unix.EROFS) {
			s.unmigrated = true
			return nil
		}
		return err
	}
	return nil
}

func (s *Store) migrate() error {
	var st unix.Stat_t
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	if err := unix.Fstatat(s.root.FD, summariesMark, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		return nil
	}
	names, err := readNames(s.jobs)
	if err != nil {
		return err
	}
	for _, job := range names {
		if ValidJob(job) != nil {
			continue
		}
		js, err := s.rebuildSummary(job)
		if err != nil {
			return fmt.Errorf("migrating %s to summaries: %w", s.dir, err)
		}
		if len(js.runs) == 0 {
			continue
		}
		js.trimCounted(maxCounted)
		jd, err := openSubdir(s.jobs, job)
		if err != nil {
			return err
		}
		err = s.rep.Replace(jd, summaryName, js.encode())
		unix.Close(jd.FD)
		if err != nil {
			return fmt.Errorf("migrating %s to summaries: %w", s.dir, err)
		}
		reached("migrate-job")
	}
	if err := createEmpty(s.root, summariesMark); err != nil {
		return err
	}
	return s.root.Sync()
}
