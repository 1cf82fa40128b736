package ledger

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/internal/durable"
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
	out := make([]Summary, 0, len(jobs))
	var errs []error
	for _, j := range jobs {
		sum, err := s.summary(j)
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

// summary computes job's summary from its stored records and the counts
// its prunes kept (jobs/JOB/_pruned).
func (s *Store) summary(job string) (Summary, error) {
	sum := Summary{Job: job}
	recs, err := s.List(Filter{Job: job})
	for _, r := range recs {
		sum.add(r)
	}
	pruned, perr := s.prunedRuns(job, recs)
	if perr != nil {
		err = errors.Join(err, perr)
	}
	for st, n := range pruned {
		if sum.Runs == nil {
			sum.Runs = map[Status]uint64{}
		}
		sum.Runs[st] += n
	}
	if len(recs) > 0 {
		if r, lerr := s.Latest(job); lerr == nil {
			sum.Latest = r
		} else if !errors.Is(lerr, ErrNotFound) {
			err = errors.Join(err, lerr)
		}
	}
	return sum, err
}

// add counts r into sum (Latest aside).
func (sum *Summary) add(r Record) {
	if !r.Status.Terminal() {
		sum.Live++
		return
	}
	if sum.Runs == nil {
		sum.Runs = map[Status]uint64{}
	}
	sum.Runs[r.Status]++
	if newerFinish(r, sum.LastFinished) {
		sum.LastFinished = r
	}
	if r.Status == Completed && newerFinish(r, sum.LastSuccess) {
		sum.LastSuccess = r
	}
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

// prunedName is the file in a job's directory that keeps the counts of
// its pruned executions, by status, so that Summary.Runs never decreases:
//
//	STATUS N           one line per terminal status counted
//	- ID               an execution the prune that wrote the file was
//	                   dropping: counted above, and also while still stored
//
// Prune writes it (durably, under the lock) before it deletes any record,
// so a prune cut short leaves ids listed that are still stored: a reader
// counts those once, from the records.
const prunedName = "_pruned"

// maxPrunedSize bounds the _pruned file (a prune of a million records).
const maxPrunedSize = 32 << 20

// prunedRuns returns the counts job's prunes kept, less the executions
// still stored among recs (every readable record of job).
func (s *Store) prunedRuns(job string, recs []Record) (map[Status]uint64, error) {
	jd, err := openSubdir(s.jobs, job)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer unix.Close(jd.FD)
	counts, pending, err := readPruned(jd)
	if err != nil || len(pending) == 0 {
		return counts, err
	}
	held := map[string]Status{}
	for _, r := range recs {
		held[r.ID] = r.Status
	}
	for _, id := range pending {
		if st, ok := held[id]; ok && counts[st] > 0 {
			counts[st]--
		}
	}
	return counts, nil
}

// readPruned parses jd's _pruned file (none: no counts).
func readPruned(jd dirh) (map[Status]uint64, []string, error) {
	b, err := readSmall(jd, prunedName, maxPrunedSize)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	counts := map[Status]uint64{}
	var pending []string
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if k == "-" && ValidID(v) == nil {
			pending = append(pending, v)
			continue
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if !ok || err != nil || !Status(k).Terminal() {
			return nil, nil, fmt.Errorf("%w: %s: bad line %q", ErrCorrupt, jd.Show(prunedName), line)
		}
		counts[Status(k)] = n
	}
	return counts, pending, nil
}

// writePruned makes jd's _pruned file count drop (executions of its job
// about to be deleted) on top of what it counted, durably. held is every
// readable record of the job. Called with the lock held.
func writePruned(jd dirh, held []Record, drop []Record) error {
	counts, pending, err := readPruned(jd)
	if err != nil {
		return err
	}
	if counts == nil {
		counts = map[Status]uint64{}
	}
	stored := map[string]Status{}
	for _, r := range held {
		stored[r.ID] = r.Status
	}
	for _, id := range pending {
		// Listed by a prune cut short: counted in counts, and deleted
		// now or never by that prune; this prune counts it afresh if it
		// drops it.
		if st, ok := stored[id]; ok && counts[st] > 0 {
			counts[st]--
		}
	}
	var b strings.Builder
	for _, r := range drop {
		counts[r.Status]++
	}
	for _, st := range Statuses {
		if st.Terminal() && counts[st] > 0 {
			fmt.Fprintf(&b, "%s %d\n", st, counts[st])
		}
	}
	for _, r := range drop {
		b.WriteString("- " + r.ID + "\n")
	}
	return durable.Write(jd, prunedName, []byte(b.String()), true)
}
