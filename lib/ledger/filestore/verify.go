package filestore

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/internal/durable"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/filestore/jobindex"
	"github.com/tether-sh/tether/lib/ledger/filestore/joblog"
)

// Verify (ledger verify) reads the store as no reader does: whole, each
// file against the others. The log is the truth; every other file is
// derived from it (an index, a summary, a link) or a trace of it (a slot,
// an output), and each is checked against it. The checks, job by job:
//
//   - the log: its header names this job (not a log copied from another
//     job's folder); every frame valid (a torn tail, one append cut short,
//     is normal and not reported: the next writer cuts it), so none
//     doubled or spliced in (a frame's CRC covers its log and offset), and
//     the valid frames past damage are read on; one header, at its start;
//     each execution claimed once, of this job, and each update following
//     its own claim and no terminal version;
//   - _ids: of the log in place, holding exactly the frames that made an
//     execution terminal (none past the log's end);
//   - _summary: trusted (its CRC, generation, an offset inside the log)
//     and counting what the log says up to that offset;
//   - each @INSTANT slot: naming an execution of the log that holds that
//     instant, or a tombstone of one the log no longer holds; and every
//     execution of the log with an instant has its slot;
//   - names that are none of these (stray files).
//
// Then the store's: each link in active/ names a live execution's newest
// frame in its own job, and every live execution has one; each output/ID
// is of an execution the store holds and has a sane header; no stray name
// in the store's folder, jobs/ or active/.
//
// The repair, under the lock, writes a log anew (as prune writes the next
// generation: each execution once, as its newest version) where its
// structure is wrong, then rebuilds from it every index, summary and link
// that disagrees, and marks what it cannot rebuild: a slot that names an
// execution the log lacks becomes a tombstone (taken for good: the
// execution may have run), never free; a log copied in from another job
// is removed where that job's own log is the same log. What it cannot
// mend (a log whose header is damaged, a stray file) it names and leaves.
// It takes the lock alone, not a writer's first mending of the boot's
// links (linked.go): every change is made, and said, here.

// verifyChecks names the checks of a whole store, for the summary line.
const verifyChecks = "logs, indexes, summaries, slots, links, outputs, stray files"

// lostID is the holder a tombstone names where the slot named no
// execution the store could tell (garbage): none has that id.
const lostID = "lost"

// vexec is an execution as the log says.
type vexec struct {
	id                string
	claimOff, lastOff int64
	terminal          bool
	rec               ledger.Record // its newest version
	foreign           bool          // of another job
}

// vjob is a job's log as Verify read it.
type vjob struct {
	job   string
	jd    dirh
	l     *jobLog // nil: no log
	execs []*vexec
	byID  map[string]*vexec
	// byClaim is by claim offset.
	byClaim map[int64]*vexec
	end     int64 // where the valid frames end
	size    int64 // the log's size, read
	// foreignLog: the log in place is another job's (copied in).
	foreignLog bool
	// unreadable: the log's header cannot be read.
	unreadable bool
	// What is wrong with the log's structure.
	headers, dups, orphans, afterEnd int
	damaged                          [][2]int64 // [from, to) holds no valid frame
	foreign                          map[string]int
}

type verifier struct {
	s    *Store
	o    ledger.VerifyOptions
	fn   func(ledger.Problem) error
	rep  *ledger.VerifyReport
	jobs map[string]*vjob
	// unreadable: some job's log cannot be read at all.
	unreadable bool
}

// Verify cross-checks the store (see above) and, with o.Repair, mends it.
func (s *Store) Verify(o ledger.VerifyOptions, fn func(ledger.Problem) error) (ledger.VerifyReport, error) {
	rep := ledger.VerifyReport{Checks: verifyChecks}
	if o.Job != "" {
		if err := ledger.ValidJob(o.Job); err != nil {
			return rep, err
		}
		rep.Checks = "log, index, summary, slots, links"
	}
	if o.Repair {
		if s.readOnly {
			return rep, fmt.Errorf("%w: %s: only its owner may repair it, opened for writing", ledger.ErrUnsafeStore, s.dir)
		}
		// The lock alone, not the first writer's mending: every change
		// is made, and said, here.
		unlock, err := s.lockFile(nil)
		if err != nil {
			return rep, err
		}
		defer unlock()
	}
	v := &verifier{s: s, o: o, fn: fn, rep: &rep, jobs: map[string]*vjob{}}
	defer func() {
		for _, j := range v.jobs {
			if j.l != nil {
				j.l.Close()
			}
			closeDir(j.jd)
		}
	}()
	var jobs []string
	if o.Job != "" {
		jobs = []string{o.Job}
	} else {
		var err error
		if jobs, err = s.jobNames(); err != nil {
			return rep, err
		}
	}
	for _, job := range jobs {
		if err := v.job(job); err != nil {
			return rep, err
		}
	}
	if err := v.links(); err != nil {
		return rep, err
	}
	if o.Job == "" {
		if err := v.outputs(); err != nil {
			return rep, err
		}
		if err := v.strays(); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// problem passes on one problem; with a repair, fix mends it first (nil:
// it cannot be mended, repair says why).
func (v *verifier) problem(job, what, repair string, fix func() error) error {
	p := ledger.Problem{Job: job, What: what, Repair: repair, Cannot: fix == nil}
	if v.o.Repair && fix != nil {
		if err := fix(); err != nil {
			p.Cannot, p.Repair = true, repair+" failed: "+err.Error()
		} else {
			v.rep.Repaired++
		}
	}
	v.rep.Problems++
	return v.fn(p)
}

// job checks one job: its log, then what is derived from it.
func (v *verifier) job(job string) error {
	jd, err := openSubdir(v.s.jobs, job)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && v.o.Job != "" {
			return fmt.Errorf("%w: no job %s in %s", ledger.ErrNotFound, job, v.s.dir)
		}
		return err
	}
	j := &vjob{job: job, jd: jd}
	v.jobs[job] = j
	v.rep.Jobs++
	if err := v.foreignLog(j); err != nil {
		return err
	}
	l, err := rawLog(jd, job)
	switch {
	case errors.Is(err, os.ErrNotExist) || j.foreignLog:
	case errors.Is(err, ledger.ErrCorrupt):
		// Nothing of it can be read, nor anything checked against it:
		// links and outputs that may be its executions' are left alone.
		j.byID, j.unreadable, v.unreadable = map[string]*vexec{}, true, true
		return v.problem(job, "the log cannot be read: "+oneLine(err), "restore jobs/"+job+"/_log from a backup, or move the job's folder away", nil)
	case err != nil:
		return err
	default:
		j.l = l
	}
	if err := v.scan(j); err != nil {
		return err
	}
	if j.l != nil && j.broken() {
		if err := v.problem(job, j.describe(), "write the log anew, each execution once as its newest version (as prune does), and rebuild what names it", func() error {
			return v.rewrite(j)
		}); err != nil {
			return err
		}
	}
	if j.l == nil && !j.foreignLog && (exists(jd, jobindex.Name) || exists(jd, summaryName)) {
		if err := v.problem(job, "no _log, though its index or summary names records (a log removed?)", "its records are lost: restore jobs/"+job+"/_log from a backup (the repair marks what named them)", nil); err != nil {
			return err
		}
	}
	v.rep.Executions += len(j.kept())
	if err := v.ids(j); err != nil {
		return err
	}
	if err := v.summary(j); err != nil {
		return err
	}
	return v.slots(j)
}

// foreignLog finds a log in j's folder that another job's header names
// (copied from its folder): this job's records are not in it. The repair
// removes it where that job's own log is the same log (its id), a copy;
// otherwise it may be the other job's only copy, and stays. Then j's log
// is read as missing.
func (v *verifier) foreignLog(j *vjob) error {
	l, err := joblog.Open(j.jd, false, nil, ownedIn(j.jd))
	if err != nil {
		return nil // said by openLog
	}
	other, id := l.Job, l.ID
	l.Close()
	if other == j.job {
		return nil
	}
	j.foreignLog = true
	what := fmt.Sprintf("_log is the log of job %q (copied from its folder?): none of %s's records is in it", other, j.job)
	var fix func() error
	repair := fmt.Sprintf("move it back to jobs/%s/_log by hand if it is that job's only copy (restore %s's own from a backup)", other, j.job)
	if ledger.ValidJob(other) == nil {
		if od, err := openSubdir(v.s.jobs, other); err == nil {
			if ol, err := joblog.Open(od, false, nil, ownedIn(od)); err == nil {
				if ol.ID == id {
					repair = fmt.Sprintf("remove it: %s's own log is the same log (restore %s's own from a backup)", other, j.job)
					fix = func() error { return unlinkIn(j.jd, joblog.Name) }
				}
				ol.Close()
			}
			closeDir(od)
		}
	}
	return v.problem(j.job, what, repair, fix)
}

// rawLog opens job's log in its folder jd for reading as it is, with
// none of the checks a reader makes against the files beside it: Verify
// makes them itself, and says what they find.
func rawLog(jd dirh, job string) (*jobLog, error) {
	l, err := joblog.Open(jd, false, nil, ownedIn(jd))
	if err != nil {
		return nil, err
	}
	return withBase(l, job)
}

// scan reads j's log whole, past any damage, into j.
func (v *verifier) scan(j *vjob) error {
	j.execs, j.byID, j.byClaim, j.foreign = nil, map[string]*vexec{}, map[int64]*vexec{}, map[string]int{}
	j.headers, j.dups, j.orphans, j.afterEnd, j.damaged = 0, 0, 0, 0, nil
	if j.l == nil {
		return nil
	}
	l := j.l
	size := l.size()
	j.size = size
	off := l.First
	for {
		end, err := l.Scan(off, j.frame)
		if err == nil {
			j.end = end
			break
		}
		if !errors.Is(err, ledger.ErrCorrupt) {
			return err
		}
		next := nextFrame(l, end+1, size)
		j.damaged = append(j.damaged, [2]int64{end, next})
		if next >= size {
			j.end = end
			break
		}
		off = next
	}
	for _, x := range j.execs {
		r, err := l.version(execRef{x.claimOff, x.lastOff})
		if err != nil {
			return err
		}
		x.rec, x.terminal = r, r.Status.Terminal()
		if r.Job != j.job {
			x.foreign = true
			j.foreign[r.Job]++
		}
	}
	return nil
}

// frame takes one frame of j's log.
func (j *vjob) frame(e joblog.Entry) error {
	switch e.Kind {
	case joblog.KindHeader:
		j.headers++
	case joblog.KindClaim:
		if j.byID[string(e.ID)] != nil {
			j.dups++
			return nil
		}
		x := &vexec{id: string(e.ID), claimOff: e.Off, lastOff: e.Off}
		j.execs = append(j.execs, x)
		j.byID[x.id], j.byClaim[e.Off] = x, x
	case joblog.KindUpdate:
		x := j.byClaim[e.Ref]
		switch {
		case x == nil || x.id != string(e.ID):
			j.orphans++
		case x.terminal:
			j.afterEnd++
		default:
			x.lastOff, x.terminal = e.Off, terminalFrame(e)
		}
	}
	return nil
}

// nextFrame is where the first valid frame at or after from starts (size:
// none).
func nextFrame(l *jobLog, from, size int64) int64 {
	buf := make([]byte, joblog.ReadSize)
	for at := from; at < size; {
		n, err := unix.Pread(l.FD(), buf, at)
		if err != nil || n < 4 {
			return size
		}
		for i := 0; i+4 <= n; i++ {
			if buf[i] == 'T' && buf[i+1] == 'L' && buf[i+2] == 'G' {
				if _, err := l.ReadAt(at + int64(i)); err == nil {
					return at + int64(i)
				}
			}
		}
		at += int64(n - 3)
	}
	return size
}

// broken reports whether j's log is not as its writers leave it.
func (j *vjob) broken() bool {
	return j.headers > 0 || j.dups > 0 || j.orphans > 0 || j.afterEnd > 0 || len(j.damaged) > 0 || len(j.foreign) > 0
}

// describe says what is wrong with j's log, in one line.
func (j *vjob) describe() string {
	var w []string
	for _, d := range j.damaged {
		if d[1] >= j.size {
			w = append(w, fmt.Sprintf("no valid frame from offset %d to its end %d, more than a torn tail (a log doubled or spliced, or bytes appended)", d[0], d[1]))
		} else {
			w = append(w, fmt.Sprintf("no valid frame from offset %d to %d (damage, valid frames after it)", d[0], d[1]))
		}
	}
	if j.headers > 0 {
		w = append(w, fmt.Sprintf("%d log header(s) past its start (a log appended to it: doubled or spliced)", j.headers))
	}
	if j.dups > 0 {
		w = append(w, fmt.Sprintf("%d claim(s) of executions claimed before", j.dups))
	}
	if j.orphans > 0 {
		w = append(w, fmt.Sprintf("%d update(s) of no claim of theirs", j.orphans))
	}
	if j.afterEnd > 0 {
		w = append(w, fmt.Sprintf("%d update(s) after their execution ended", j.afterEnd))
	}
	jobs := make([]string, 0, len(j.foreign))
	for k := range j.foreign {
		jobs = append(jobs, k)
	}
	sort.Strings(jobs)
	for _, k := range jobs {
		w = append(w, fmt.Sprintf("%d execution(s) of job %s (another job's log copied in)", j.foreign[k], k))
	}
	return "_log: " + strings.Join(w, ", ")
}

// kept is j's executions of its own job, in claim order.
func (j *vjob) kept() []*vexec {
	var out []*vexec
	for _, x := range j.execs {
		if !x.foreign {
			out = append(out, x)
		}
	}
	return out
}

// ids checks j's index against its log.
func (v *verifier) ids(j *vjob) error {
	f, ok := readIds(j.jd)
	present := ok || exists(j.jd, jobindex.Name)
	if j.l == nil {
		if !present {
			return nil
		}
		return v.problem(j.job, "_ids indexes a log that is not there", "remove it", func() error {
			return unlinkIn(j.jd, jobindex.Name)
		})
	}
	var ents []jobindex.Ent
	for _, x := range j.kept() {
		if x.terminal {
			ents = append(ents, jobindex.EntOf(x.id, x.lastOff))
		}
	}
	slices.SortFunc(ents, jobindex.Cmp)
	what := ""
	switch {
	case !present:
		what = "no _ids (readers walk the whole log for a finished execution)"
	case !ok:
		what = "_ids is not an index"
	case !f.Of(j.l.Gen, j.l.Ino):
		what = fmt.Sprintf("_ids indexes another file (generation %d, inode %d) than the log in place (generation %d, inode %d: a copy or a restore of it?), so readers walk the log", f.Gen, f.Ino, j.l.Gen, j.l.Ino)
	case !f.Holds(ents):
		want := map[jobindex.Ent]bool{}
		for _, e := range ents {
			want[e] = true
		}
		past, wrong, have := 0, 0, map[jobindex.Ent]bool{}
		for _, e := range jobindex.Ents(f.Entries) {
			have[e] = true
			switch {
			case e.Off >= j.end:
				past++
			case !want[e]:
				wrong++
			}
		}
		missing := 0
		for _, e := range ents {
			if !have[e] {
				missing++
			}
		}
		var w []string
		if past > 0 {
			w = append(w, fmt.Sprintf("%d entries past the log's end (records lost from the log)", past))
		}
		if wrong > 0 {
			w = append(w, fmt.Sprintf("%d entries naming no execution's terminal frame", wrong))
		}
		if missing > 0 {
			w = append(w, fmt.Sprintf("%d finished executions missing", missing))
		}
		if len(w) == 0 {
			w = append(w, "entries out of order")
		}
		what = "_ids: " + strings.Join(w, ", ")
	default:
		return nil
	}
	return v.problem(j.job, what, "write it anew from the log", func() error {
		return writeIds(j.jd, idsOf(j.l, ents), true)
	})
}

// summary checks j's cached summary against its log.
func (v *verifier) summary(j *vjob) error {
	if j.l == nil {
		if !exists(j.jd, summaryName) {
			return nil
		}
		return v.problem(j.job, "_summary counts a log that is not there", "remove it", func() error {
			return unlinkIn(j.jd, summaryName)
		})
	}
	cache, gen, end, ok := readCache(j.jd, j.job)
	var all, upTo jobSummary
	all.add(j.l.removed())
	upTo.add(j.l.removed())
	for _, x := range j.kept() {
		if !x.terminal {
			continue
		}
		all.count(x.rec)
		if ok && x.lastOff < end {
			upTo.count(x.rec)
		}
	}
	what := ""
	switch {
	case !exists(j.jd, summaryName):
		if all.empty() {
			return nil // nothing finished yet: nothing to cache
		}
		what = "no _summary (every status, check and metrics recounts the log)"
	case !ok:
		what = "_summary cannot be trusted (damaged): every read recounts the log"
	case gen != j.l.Gen:
		what = fmt.Sprintf("_summary counts another generation (%d) of the log (%d)", gen, j.l.Gen)
	case end > j.end:
		what = fmt.Sprintf("_summary counted up to offset %d, past the log's end %d (records lost from the log)", end, j.end)
	case end < j.l.First:
		what = fmt.Sprintf("_summary counted up to offset %d, before the log's first frame", end)
	case !sameSummary(cache, upTo):
		what = fmt.Sprintf("_summary counts %s up to offset %d, the log %s", countText(cache), end, countText(upTo))
	default:
		return nil
	}
	return v.problem(j.job, what, "count it anew from the log", func() error {
		// Counted as every writer counts it, from the log alone.
		if err := unlinkIn(j.jd, summaryName); err != nil {
			return err
		}
		_, err := v.s.settle(j.jd, j.l, j.job)
		return err
	})
}

// sameSummary reports whether a and b count the same.
func sameSummary(a, b jobSummary) bool {
	for _, st := range ledger.Statuses {
		if a.runs[st] != b.runs[st] {
			return false
		}
	}
	return a.finished.ID == b.finished.ID && a.success.ID == b.success.ID
}

// countText is js's counts, for a message.
func countText(js jobSummary) string {
	var w []string
	for _, st := range ledger.Statuses {
		if n := js.runs[st]; n > 0 {
			w = append(w, fmt.Sprintf("%d %s", n, st))
		}
	}
	if len(w) == 0 {
		return "none"
	}
	return strings.Join(w, ", ")
}

// slots checks the names in j's folder: its slots against its log, and
// that none is stray.
func (v *verifier) slots(j *vjob) error {
	names, err := readNames(j.jd)
	if err != nil {
		return err
	}
	holders := map[string][]*vexec{} // by slot name, in claim order
	for _, x := range j.kept() {
		if !x.rec.Instant.IsZero() {
			k := instantKey(x.rec.Instant)
			holders[k] = append(holders[k], x)
		}
	}
	seen := map[string]bool{}
	for _, n := range names {
		switch {
		case n == joblog.Name || n == jobindex.Name || n == summaryName || strings.HasPrefix(n, tmpPrefix):
			continue
		case !strings.HasPrefix(n, "@"):
			if err := v.problem(j.job, "stray file jobs/"+j.job+"/"+n+" (not the store's)", "move it away by hand", nil); err != nil {
				return err
			}
			continue
		}
		seen[n] = true
		if err := v.slot(j, n, holders[n]); err != nil {
			return err
		}
	}
	keys := make([]string, 0, len(holders))
	for k := range holders {
		if !seen[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		h := holders[k][len(holders[k])-1]
		if err := v.problem(j.job, fmt.Sprintf("slot %s is missing: execution %s holds that instant (it could run again)", k, h.id), "make it, naming "+h.id, func() error {
			return setSlot(j.jd, k, h.id)
		}); err != nil {
			return err
		}
	}
	return nil
}

// slot checks the slot name of j, which the executions holders hold in
// the log.
func (v *verifier) slot(j *vjob, name string, holders []*vexec) error {
	b, err := readSlot(j.jd, name)
	f := strings.Fields(string(b))
	if err == nil && (len(f) < 1 || len(f) > 2 || ledger.ValidID(f[0]) != nil) {
		err = errors.New("garbage")
	}
	var what string
	switch {
	case err != nil && !errors.Is(err, ledger.ErrCorrupt) && !strings.Contains(err.Error(), "garbage"):
		return err
	case err != nil:
		what = fmt.Sprintf("slot %s is not a slot (%s)", name, oneLine(err))
	case len(f) == 2:
		x := j.byID[f[0]]
		if x == nil && ledger.BlocksInstant(ledger.Status(f[1])) {
			return nil // a tombstone
		}
		if x == nil {
			what = fmt.Sprintf("slot %s is a tombstone of status %q, which does not keep an instant taken", name, f[1])
		} else {
			what = fmt.Sprintf("slot %s is a tombstone of %s, which the log holds", name, f[0])
		}
	default:
		for _, h := range holders {
			if h.id == f[0] {
				return nil
			}
		}
		if x := j.byID[f[0]]; x != nil && !x.foreign {
			what = fmt.Sprintf("slot %s names %s, an execution of another instant", name, f[0])
		} else {
			what = fmt.Sprintf("slot %s names %s, which the log does not hold (lost from the log, or a claim that died before its frame)", name, f[0])
		}
	}
	if len(holders) > 0 {
		h := holders[len(holders)-1]
		return v.problem(j.job, what, "point it at "+h.id+", the log's holder of that instant", func() error {
			return setSlot(j.jd, name, h.id)
		})
	}
	// No execution of the log holds the instant: whatever held it may
	// have run, so the instant stays taken.
	id := lostID
	if len(f) >= 1 && ledger.ValidID(f[0]) == nil && j.byID[f[0]] == nil {
		id = f[0]
	}
	tomb := id + " " + string(ledger.Unknown)
	return v.problem(j.job, what, fmt.Sprintf("make it a tombstone %q: the instant stays taken", tomb), func() error {
		return setSlot(j.jd, name, tomb)
	})
}

// setSlot makes slot name in jd hold target, durably.
func setSlot(jd dirh, name, target string) error {
	if err := relink(jd, name, target); err != nil {
		return err
	}
	return jd.Sync()
}

// exists reports whether name is in d.
func exists(d dirh, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(d.FD, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
}

// unlinkIn removes name from d.
func unlinkIn(d dirh, name string) error {
	if err := unix.Unlinkat(d.FD, name, 0); err != nil && err != unix.ENOENT {
		return &os.PathError{Op: "unlink", Path: d.Show(name), Err: err}
	}
	return nil
}

// oneLine is err's message on one line.
func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }

// links checks active/ against the logs: each link names a live
// execution's newest frame in its own job, and each live execution has
// one.
func (v *verifier) links() error {
	names, err := readNames(v.s.active)
	if err != nil {
		return err
	}
	// Where each execution of the jobs checked is.
	where := map[string]*vjob{}
	for _, j := range v.jobs {
		for _, x := range j.kept() {
			where[x.id] = j
		}
	}
	linked := map[string]bool{}
	buf := make([]byte, 256)
	changed := false
	for _, n := range names {
		if strings.HasPrefix(n, tmpPrefix) {
			continue
		}
		if ledger.ValidID(n) != nil {
			if v.o.Job == "" {
				if err := v.problem("", "stray file active/"+n+" (not a link's name)", "move it away by hand", nil); err != nil {
					return err
				}
			}
			continue
		}
		k, err := unix.Readlinkat(v.s.active.FD, n, buf)
		target := ""
		if err == nil {
			target = string(buf[:k])
		} else if err == unix.ENOENT {
			continue
		}
		gen, off, job, ok := parseHint(target)
		j := where[n]
		if v.o.Job != "" && job != v.o.Job && j == nil {
			continue // another job's
		}
		if j != nil {
			linked[n] = true
		}
		var what string
		switch {
		case !ok:
			what = fmt.Sprintf("active/%s: bad link %q", n, target)
		case v.jobs[job] == nil && j == nil && v.o.Job != "":
			continue // a job not checked
		case j == nil && v.jobs[job] != nil && v.jobs[job].unreadable:
			continue // its log cannot be read: said already
		case j == nil:
			if v.jobs[job] == nil {
				what = fmt.Sprintf("active/%s names job %s, which the store does not hold", n, job)
			} else {
				what = fmt.Sprintf("active/%s names an execution %s's log does not hold", n, job)
			}
		case j.job != job:
			what = fmt.Sprintf("active/%s names job %s, but the execution is %s's", n, job, j.job)
		case j.byID[n].terminal:
			what = fmt.Sprintf("active/%s links an execution that ended (%s)", n, j.byID[n].rec.Status)
		case gen != j.l.Gen || off != j.byID[n].lastOff:
			what = fmt.Sprintf("active/%s names %d:%d, not its newest frame %d:%d", n, gen, off, j.l.Gen, j.byID[n].lastOff)
		default:
			continue
		}
		show := job
		if j != nil {
			show = j.job
		}
		changed = true
		if j == nil || j.byID[n].terminal {
			why := "remove it"
			if j == nil {
				why = "remove it: no log holds its record"
			}
			err = v.problem(show, what, why, func() error { return unlinkIn(v.s.active, n) })
		} else {
			x := j.byID[n]
			err = v.problem(show, what, fmt.Sprintf("point it at %s", hintOf(j.l.Gen, x.lastOff, j.job)), func() error {
				return relink(v.s.active, n, hintOf(j.l.Gen, x.lastOff, j.job))
			})
		}
		if err != nil {
			return err
		}
	}
	jobs := make([]string, 0, len(v.jobs))
	for job := range v.jobs {
		jobs = append(jobs, job)
	}
	sort.Strings(jobs)
	for _, job := range jobs {
		j := v.jobs[job]
		for _, x := range j.kept() {
			if x.terminal || linked[x.id] {
				continue
			}
			changed = true
			if err := v.problem(job, fmt.Sprintf("live execution %s (%s) has no link in active/ (list --status running, recover and --exclusive miss it)", x.id, x.rec.Status), "link it", func() error {
				return relink(v.s.active, x.id, hintOf(j.l.Gen, x.lastOff, job))
			}); err != nil {
				return err
			}
		}
	}
	if changed && v.o.Repair {
		return v.s.active.Sync()
	}
	return nil
}

// outputs checks output/: each file is of an execution the store holds
// and starts with a sane header.
func (v *verifier) outputs() error {
	d, err := openSubdir(v.s.root, outputDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer closeDir(d)
	names, err := readNames(d)
	if err != nil {
		return err
	}
	held := map[string]bool{}
	for _, j := range v.jobs {
		for _, x := range j.kept() {
			held[x.id] = true
		}
	}
	for _, n := range names {
		if strings.HasPrefix(n, tmpPrefix) {
			continue
		}
		var what string
		switch b, err := readSmallPrefix(d, n, maxHeaderLen); {
		case ledger.ValidID(n) != nil:
			what = "stray file output/" + n + " (not an execution's output)"
			if err := v.problem("", what, "move it away by hand", nil); err != nil {
				return err
			}
			continue
		case !held[n] && v.unreadable:
			continue // it may be of a log that cannot be read
		case !held[n]:
			what = "output/" + n + " is of an execution the store does not hold"
		case err != nil:
			what = "output/" + n + " cannot be read: " + oneLine(err)
		default:
			if _, _, ok := parseOutputHeader(b); ok {
				continue
			}
			what = "output/" + n + " has no sane header (it cannot be read)"
		}
		if err := v.problem("", what, "remove it", func() error { return unlinkIn(d, n) }); err != nil {
			return err
		}
	}
	return nil
}

// strays checks the names in the store's folder and jobs/.
func (v *verifier) strays() error {
	names, err := readNames(v.s.root)
	if err != nil {
		return err
	}
	for _, n := range names {
		switch {
		case n == lockName || n == linkedName || n == logsMark || n == execDir || n == jobsDir || n == activeDir || n == handoffDir || n == outputDir:
		case strings.HasPrefix(n, tmpPrefix), strings.HasPrefix(n, "boot."):
		default:
			if err := v.problem("", "stray file "+n+" in the store's folder (not the store's)", "move it away by hand", nil); err != nil {
				return err
			}
		}
	}
	if names, err = readNames(v.s.jobs); err != nil {
		return err
	}
	for _, n := range names {
		if ledger.ValidJob(n) != nil && !strings.HasPrefix(n, tmpPrefix) {
			if err := v.problem("", "stray file jobs/"+n+" (not a job's name)", "move it away by hand", nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// rewrite writes j's log anew from what the scan found, each execution of
// its job once, as its newest version, and reads it again. Called with
// the lock held.
func (v *verifier) rewrite(j *vjob) error {
	kept := j.kept()
	refs := make([]execRef, len(kept))
	for i, x := range kept {
		refs[i] = execRef{x.claimOff, x.lastOff}
	}
	nl, _, _, err := writeNext(j.jd, j.l, j.job, refs, make([]fate, len(refs)), j.l.removed())
	if err != nil {
		return err
	}
	nl.Close()
	if err := j.jd.Sync(); err != nil {
		return err
	}
	j.l.Close()
	if j.l, err = rawLog(j.jd, j.job); err != nil {
		j.l = nil
		return err
	}
	return v.scan(j)
}

// readSmallPrefix reads at most n bytes from the start of name, a regular
// file of d's owner (openRegular's checks).
func readSmallPrefix(d dirh, name string, n int) ([]byte, error) {
	fd, st, err := openRegular(d, name)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	buf := make([]byte, min(int64(n), st.Size))
	m, err := durable.PreadAt(fd, buf, 0)
	if err != nil {
		return nil, &os.PathError{Op: "read", Path: d.Show(name), Err: err}
	}
	return buf[:m], nil
}
