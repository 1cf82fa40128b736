package filestore

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/ledger"
)

// Summaries returns the summary of each named job (every job when none
// is named), ordered by job name.
func (s *Store) Summaries(jobs ...string) ([]ledger.Summary, error) {
	for _, j := range jobs {
		if err := ledger.ValidJob(j); err != nil {
			return nil, err
		}
	}
	if len(jobs) == 0 {
		names, err := readNames(s.jobs)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			if ledger.ValidJob(n) == nil {
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
	out := make([]ledger.Summary, 0, len(jobs))
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
func newerFinish(r, than ledger.Record) bool {
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
	maxSummarySize = 4*ledger.MaxRecordSize + 4096
)

// jobSummary is the stored part of a summary.
type jobSummary struct {
	runs     map[ledger.Status]uint64
	counted  []string
	finished ledger.Record
	success  ledger.Record
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
func (js *jobSummary) count(r ledger.Record) bool {
	if js.hasCounted(r.ID) {
		return false
	}
	if js.runs == nil {
		js.runs = map[ledger.Status]uint64{}
	}
	js.runs[r.Status]++
	js.counted = append(js.counted, r.ID)
	if newerFinish(r, js.finished) {
		js.finished = r
	}
	if r.Status == ledger.Completed && newerFinish(r, js.success) {
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

func (js *jobSummary) Encode() []byte {
	var b bytes.Buffer
	b.WriteString(summaryMagic + "\nruns")
	for _, st := range ledger.Statuses {
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
		b.Write(js.finished.Encode())
	}
	if js.success.ID != "" {
		b.WriteString("success ")
		b.Write(js.success.Encode())
	}
	return b.Bytes()
}

func decodeSummary(b []byte, job string) (jobSummary, error) {
	var js jobSummary
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) < 3 || lines[0] != summaryMagic {
		return js, fmt.Errorf("%w: not a job summary", ledger.ErrCorrupt)
	}
	f := strings.Fields(lines[1])
	if len(f) == 0 || f[0] != "runs" || len(f)%2 != 1 {
		return js, fmt.Errorf("%w: summary: bad runs line", ledger.ErrCorrupt)
	}
	js.runs = map[ledger.Status]uint64{}
	for i := 1; i < len(f); i += 2 {
		n, err := strconv.ParseUint(f[i+1], 10, 64)
		if err != nil || !ledger.Status(f[i]).Terminal() {
			return js, fmt.Errorf("%w: summary: bad count %s %s", ledger.ErrCorrupt, f[i], f[i+1])
		}
		js.runs[ledger.Status(f[i])] = n
	}
	f = strings.Fields(lines[2])
	if len(f) == 0 || f[0] != "counted" {
		return js, fmt.Errorf("%w: summary: bad counted line", ledger.ErrCorrupt)
	}
	for _, id := range f[1:] {
		if ledger.ValidID(id) != nil {
			return js, fmt.Errorf("%w: summary: bad id %q", ledger.ErrCorrupt, id)
		}
	}
	js.counted = f[1:]
	for _, l := range lines[3:] {
		k, v, _ := strings.Cut(l, " ")
		r, err := ledger.Decode([]byte(v), "")
		if err != nil {
			return js, fmt.Errorf("summary: %w", err)
		}
		if r.Job != job || !r.Status.Terminal() {
			return js, fmt.Errorf("%w: summary: %s is not a finished execution of %s", ledger.ErrCorrupt, k, job)
		}
		switch {
		case k == "finished":
			js.finished = r
		case k == "success" && r.Status == ledger.Completed:
			js.success = r
		default:
			return js, fmt.Errorf("%w: summary: bad line %q", ledger.ErrCorrupt, k)
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
func (s *Store) liveByJob() (map[string][]ledger.Record, error) {
	out := map[string][]ledger.Record{}
	err := s.scanActive(func(id, job string) error {
		r, err := s.readRecord(id)
		if errors.Is(err, ledger.ErrNotFound) {
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
func (s *Store) summary(job string, active []ledger.Record) (ledger.Summary, error) {
	sum := ledger.Summary{Job: job}
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
			sum.Runs = map[ledger.Status]uint64{}
		}
		sum.Runs[st] = n
	}
	if r, err := s.Latest(job); err == nil {
		sum.Latest = r
	} else if !errors.Is(err, ledger.ErrNotFound) {
		return sum, err
	}
	return sum, nil
}
