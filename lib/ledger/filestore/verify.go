package filestore

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

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
