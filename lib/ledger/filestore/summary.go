package filestore

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/internal/durable"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/filestore/jobindex"
	"github.com/tether-sh/tether/lib/ledger/filestore/joblog"
	"github.com/tether-sh/tether/lib/ledger/filestore/wire"
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
		var err error
		if jobs, err = s.jobNames(); err != nil {
			return nil, err
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
	var lend joblog.Lender // one log at a time: one set of buffers
	for _, j := range jobs {
		sum, err := s.summary(j, live[j], &lend, true)
		if err != nil {
			errs = append(errs, err)
		}
		out = append(out, sum)
	}
	return out, errors.Join(errs...)
}

// Ended returns the number of entries in job's index, which is how many
// terminal executions the job holds (ledger.EndedCounter): an fstat and a
// header's read, where a summary decodes up to settleBytes of the job's
// log. ok is false when the job has no index of this format. The count is
// off when the index is: an execution whose finish was killed between its
// entry and its link's removal may be indexed twice, and an index a prune
// left behind a new log (its header names the old one) counts the old log
// until the next writer rewrites it.
func (s *Store) Ended(job string) (n uint64, ok bool) {
	if ledger.ValidJob(job) != nil {
		return 0, false
	}
	jd, err := openSubdir(s.jobs, job)
	if err != nil {
		return 0, false
	}
	defer closeDir(jd)
	fd, _, size, ok := openIds(jd)
	if !ok {
		return 0, false
	}
	unix.Close(fd)
	return uint64(size-jobindex.Head) / jobindex.EntrySize, true
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

// A job's summary is what its log says: the header's (the counts and the
// last finished and last completed records of what prune removed) plus
// every execution that became terminal in the log. jobs/JOB/_summary
// caches it as counted up to an offset of a generation of the log:
//
//	at GEN END
//	live ID:OFF ...            executions not finished at END (claim offsets)
//	instant TIME               the latest instant a claim of the log held
//	tether-summary 2
//	runs STATUS N ...          executions that became terminal, by status
//	finished RECORD            the one that became terminal last
//	success RECORD             the Completed one that finished last
//	crc CRC                    CRC-32C of the lines above
//
// so that a reader counts only the frames after END: a finish rewrites
// the cache (to a temporary name, renamed; never flushed) once the
// frames after it pass settleBytes. The cache is only a cache: one that
// is missing, damaged, of another generation or past the log's end is
// recounted from the header. The header's summary (the same lines from
// "tether-summary 2" on) is written by prune, into the log's next
// generation, with the records it removes counted into it; so prune loses
// no count, and no record copy.
const (
	summaryName    = "_summary"
	summaryMagic   = "tether-summary 2"
	maxSummarySize = 4*ledger.MaxRecordSize + 4096
	// settleBytes is how much of a job's log a reader of its summary
	// may have to count past the cache: some 50 finishes.
	settleBytes = 16 << 10
)

// jobSummary is the stored part of a summary.
type jobSummary struct {
	runs     map[ledger.Status]uint64
	finished ledger.Record
	success  ledger.Record
	// finCopy and sucCopy: finished and success were taken from a copy
	// (a terminal claim frame, which prune and migration write), not from
	// the frame that ended the execution. Not stored.
	finCopy, sucCopy bool
	// The cache's alone, never a header's (what prune removed is not
	// live, and its slots are tombstones): the executions not finished
	// at the offset counted up to (id: its claim frame's offset), so that
	// one whose link was removed is found from the cache and the frames
	// after it (damage.go); and the latest instant claimed, so that a
	// claim of a later one, its slot missing, need not look in the log.
	live        map[string]int64
	lastInstant time.Time
	// token, a header's alone ("token N", after the runs), is the
	// greatest fencing token a claim of the job was given when prune
	// wrote the log: what keeps it growing once the claims that held it
	// are gone (lastToken). add and less leave it: a count's, not a
	// summary's.
	token uint64
}

// empty reports whether js counts nothing.
func (js jobSummary) empty() bool {
	return len(js.runs) == 0 && js.finished.ID == "" && js.success.ID == "" && js.token == 0
}

// count adds terminal record r, the last finished and last success by
// FinishedAt: for records counted in no order of the store's (a store of
// the format before job logs, migrated).
func (js *jobSummary) count(r ledger.Record) {
	if js.runs == nil {
		js.runs = map[ledger.Status]uint64{}
	}
	js.runs[r.Status]++
	if newerFinish(r, js.finished) {
		js.finished = r
	}
	if r.Status == ledger.Completed && newerFinish(r, js.success) {
		js.success = r
	}
}

// countFrame adds terminal record r, made by a frame of the log that
// comes after every frame counted so far: "last" is by the log's order,
// the store's own sequence, not by FinishedAt, which a clock stepped back
// (or forward) puts out of order. A copy (a terminal claim frame: prune's
// next generation, a migration) ends nothing there: it counts, but takes
// the place of the last finished or last success only where no frame
// that ended an execution holds it (the log's header, counted first,
// holds what its copies were before).
func (js *jobSummary) countFrame(r ledger.Record, copy bool) {
	if js.runs == nil {
		js.runs = map[ledger.Status]uint64{}
	}
	js.runs[r.Status]++
	if !copy || js.finished.ID == "" || js.finCopy {
		js.finished, js.finCopy = r, copy
	}
	if r.Status == ledger.Completed && (!copy || js.success.ID == "" || js.sucCopy) {
		js.success, js.sucCopy = r, copy
	}
}

// add adds o's counts and records to js.
func (js *jobSummary) add(o jobSummary) {
	for st, n := range o.runs {
		if js.runs == nil {
			js.runs = map[ledger.Status]uint64{}
		}
		js.runs[st] += n
	}
	if o.finished.ID != "" && newerFinish(o.finished, js.finished) {
		js.finished = o.finished
	}
	if o.success.ID != "" && newerFinish(o.success, js.success) {
		js.success = o.success
	}
}

// less is js without the executions held counts by status: what a log's
// header keeps when those executions are frames of the log (prune's next
// generation). No count goes below zero; the record copies
// stay.
func (js jobSummary) less(held map[ledger.Status]uint64) jobSummary {
	runs := map[ledger.Status]uint64{}
	for st, n := range js.runs {
		runs[st] = n - min(n, held[st])
	}
	js.runs = runs
	return js
}

func (js *jobSummary) Encode() []byte {
	var b bytes.Buffer
	b.WriteString(summaryMagic + "\nruns")
	for _, st := range ledger.Statuses {
		if n := js.runs[st]; n > 0 {
			fmt.Fprintf(&b, " %s %d", st, n)
		}
	}
	b.WriteString("\n")
	if js.token != 0 {
		fmt.Fprintf(&b, "token %d\n", js.token)
	}
	if js.finished.ID != "" {
		b.WriteString("finished ")
		b.Write(wire.Encode(js.finished))
	}
	if js.success.ID != "" {
		b.WriteString("success ")
		b.Write(wire.Encode(js.success))
	}
	return b.Bytes()
}

func decodeSummary(b []byte, job string) (jobSummary, error) {
	var js jobSummary
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) < 2 || lines[0] != summaryMagic {
		return js, fmt.Errorf("%w: not a job summary", ledger.ErrCorrupt)
	}
	runs, err := decodeRuns(lines[1])
	if err != nil {
		return js, err
	}
	js.runs = runs
	for i, l := range lines[2:] {
		k, v, _ := strings.Cut(l, " ")
		if k == "token" && i == 0 {
			if js.token, err = strconv.ParseUint(v, 10, 64); err != nil || js.token == 0 {
				return js, fmt.Errorf("%w: summary: bad token %q", ledger.ErrCorrupt, v)
			}
			continue
		}
		r, err := wire.Decode([]byte(v), "")
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

// decodeRuns reads a summary's "runs STATUS N ..." line.
func decodeRuns(line string) (map[ledger.Status]uint64, error) {
	f := strings.Fields(line)
	if len(f) == 0 || f[0] != "runs" || len(f)%2 != 1 {
		return nil, fmt.Errorf("%w: summary: bad runs line", ledger.ErrCorrupt)
	}
	runs := map[ledger.Status]uint64{}
	for i := 1; i < len(f); i += 2 {
		n, err := strconv.ParseUint(f[i+1], 10, 64)
		if err != nil || !ledger.Status(f[i]).Terminal() {
			return nil, fmt.Errorf("%w: summary: bad count %s %s", ledger.ErrCorrupt, f[i], f[i+1])
		}
		runs[ledger.Status(f[i])] = n
	}
	return runs, nil
}

// encodeCache is the cache of js, counted up to end of generation gen:
// its first line where, then its live executions and last instant, then
// the summary.
func encodeCache(js jobSummary, gen, end int64) []byte {
	b := fmt.Appendf(nil, "at %d %d\nlive", gen, end)
	ids := make([]string, 0, len(js.live))
	for id := range js.live {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		b = fmt.Appendf(b, " %s:%d", id, js.live[id])
	}
	b = fmt.Appendf(b, "\ninstant %s\n", js.lastInstant.UTC().Format(time.RFC3339Nano))
	b = append(b, js.Encode()...)
	return fmt.Appendf(b, "crc %08x\n", joblog.Checksum(b))
}

// readCache reads job's cached summary in its directory jd; ok is false
// when there is none that can be trusted.
func readCache(jd dirh, job string) (js jobSummary, gen, end int64, ok bool) {
	b, err := readSmall(jd, summaryName, maxSummarySize)
	if err != nil {
		return js, 0, 0, false
	}
	body, sum, found := bytes.Cut(b, []byte("crc "))
	if !found || strings.TrimSpace(string(sum)) != fmt.Sprintf("%08x", joblog.Checksum(body)) {
		return js, 0, 0, false
	}
	at, rest, _ := bytes.Cut(body, []byte("\n"))
	if _, err := fmt.Sscanf(string(at), "at %d %d", &gen, &end); err != nil {
		return js, 0, 0, false
	}
	liveLine, rest, _ := bytes.Cut(rest, []byte("\n"))
	instLine, rest, _ := bytes.Cut(rest, []byte("\n"))
	f := strings.Fields(string(liveLine))
	inst, ok := strings.CutPrefix(string(instLine), "instant ")
	if len(f) == 0 || f[0] != "live" || !ok {
		return js, 0, 0, false
	}
	last, err := time.Parse(time.RFC3339Nano, inst)
	if err != nil {
		return js, 0, 0, false
	}
	live := map[string]int64{}
	for _, w := range f[1:] {
		id, o, _ := strings.Cut(w, ":")
		off, err := strconv.ParseInt(o, 10, 64)
		if err != nil || ledger.ValidID(id) != nil {
			return js, 0, 0, false
		}
		live[id] = off
	}
	if js, err = decodeSummary(rest, job); err != nil {
		return js, 0, 0, false
	}
	js.live, js.lastInstant = live, last
	return js, gen, end, true
}

// counted returns job's summary as its log l says, the cache in jd used
// where it can be, and the offset it is counted up to.
func counted(jd dirh, l *jobLog, job string) (jobSummary, int64, error) {
	js, end, _, err := countedFrom(jd, l, job)
	return js, end, err
}

// countedFrom is counted, also saying whether the cache was worth
// keeping as it was (stale: missing, not trusted, or settleBytes behind).
func countedFrom(jd dirh, l *jobLog, job string) (js jobSummary, end int64, stale bool, err error) {
	var gen int64
	var ok bool
	js, gen, end, ok = readCache(jd, job)
	if !ok || gen != l.Gen || end < l.First || end > l.size() {
		js, end = jobSummary{}, l.First
		js.add(l.removed())
		stale = true
	}
	from := end
	end, err = l.Scan(end, func(e joblog.Entry) error {
		r, err := l.terminalAt(e)
		if err != nil {
			return err
		}
		if r.ID != "" {
			js.countFrame(r, e.Kind == joblog.KindClaim)
		}
		js.note(e, r)
		return nil
	})
	return js, end, stale || end-from > settleBytes, err
}

// terminalAt returns the version frame e makes when it is terminal (the
// moment its execution became terminal: no frame of it follows), else a
// zero record.
func (l *jobLog) terminalAt(e joblog.Entry) (ledger.Record, error) {
	if e.Kind == joblog.KindHeader || (e.Kind == joblog.KindUpdate && !terminalDelta(e.Data)) {
		return ledger.Record{}, nil
	}
	r, err := l.version(execRef{claimOff: e.Ref, lastOff: e.Off})
	if err != nil || !r.Status.Terminal() {
		return ledger.Record{}, err
	}
	return r, nil
}

// terminalDelta reports whether a delta may make its record terminal (it
// sets a status other than claimed or running): a cheap test before the
// delta is applied.
func terminalDelta(d []byte) bool {
	i := bytes.Index(d, []byte(`"status":"`))
	if i < 0 {
		return false
	}
	v := d[i+len(`"status":"`):]
	return !bytes.HasPrefix(v, []byte(`claimed"`)) && !bytes.HasPrefix(v, []byte(`running"`))
}

// size is l's size now.
func (l *jobLog) size() int64 {
	var st unix.Stat_t
	if err := unix.Fstat(l.FD(), &st); err != nil {
		return l.End
	}
	return st.Size
}

// maybeSettle rewrites the cached summary of loc's job when the frames
// past it pass settleBytes. Called with the lock held, after a write;
// failing, it leaves the cache as it was.
func (s *Store) maybeSettle(loc *located) {
	_, gen, end, ok := readCache(loc.jd, loc.job)
	if ok && gen == loc.log.Gen && loc.log.End-end <= settleBytes {
		return
	}
	s.settle(loc.jd, loc.log, loc.job)
}

// settle rewrites job's cached summary (jd its directory, l its log).
func (s *Store) settle(jd dirh, l *jobLog, job string) (jobSummary, error) {
	js, end, err := counted(jd, l, job)
	if err != nil {
		return js, err
	}
	reached("settle")
	return js, cacheSummary(jd, js, l.Gen, end)
}

// cacheSummary caches js as job's summary counted up to end of generation
// gen of its log (jd its directory): renamed into place, not flushed.
func cacheSummary(jd dirh, js jobSummary, gen, end int64) error {
	return durable.Write(jd, summaryName, encodeCache(js, gen, end), false)
}

// liveByJob returns the live records of every job, oldest first, from
// active/.
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
		if r.Job == job && !r.Status.Terminal() {
			out[job] = append(out[job], r)
		}
		return nil
	})
	return out, err
}

// summary returns job's summary: what its log counts, Latest, and its live
// records (as liveByJob found them); its log reads through lend's buffers.
// With linked, live is every linked live execution of the job, and one
// the log holds live without a link is reported (unlinked).
func (s *Store) summary(job string, live []ledger.Record, lend *joblog.Lender, linked bool) (ledger.Summary, error) {
	sum := ledger.Summary{Job: job, Live: len(live)}
	jd, l, ok, err := s.openJobLent(job, lend)
	if err != nil || !ok {
		return sum, err
	}
	defer closeDir(jd)
	defer l.Close()
	js, end, stale, err := countedFrom(jd, l, job)
	if err != nil {
		return sum, err
	}
	if stale {
		s.mendSummary(jd, l, js, end)
	}
	var unlinked error
	if linked {
		unlinked = s.unlinked(job, js.live, live)
	}
	sum.LastFinished, sum.LastSuccess = js.finished, js.success
	for st, n := range js.runs {
		if sum.Runs == nil {
			sum.Runs = map[ledger.Status]uint64{}
		}
		sum.Runs[st] = n
	}
	if r, err := s.latestIn(job, l); err == nil {
		sum.Latest = r
	} else if !errors.Is(err, ledger.ErrNotFound) {
		return sum, err
	}
	return sum, unlinked
}
