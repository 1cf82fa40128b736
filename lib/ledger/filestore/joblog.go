package filestore

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/filestore/joblog"
	"github.com/tether-sh/tether/lib/ledger/filestore/wire"
)

// jobLog is a job's log, jobs/JOB/_log (package joblog: its frames, its
// reads and appends, and why a crash leaves it readable), as the store
// reads it: with what its header says prune removed.
type jobLog struct {
	*joblog.Log
	base *jobSummary // the header's, what prune removed: nil for none
}

// openLog opens job's log in its directory jd: for appending (write, under
// the lock) or for reading (joblog.Open). A missing log is
// os.ErrNotExist.
func openLog(jd dirh, job string, write bool) (*jobLog, error) {
	return openLogLent(jd, job, write, nil)
}

// openLogLent is openLog reading through lend's buffers (nil: its own).
func openLogLent(jd dirh, job string, write bool, lend *joblog.Lender) (*jobLog, error) {
	l, err := joblog.Open(jd, write, lend, ownedIn(jd))
	if errors.Is(err, os.ErrNotExist) {
		return nil, missingLog(jd, err)
	}
	if err != nil {
		return nil, err
	}
	jl, err := withBase(l, job)
	if err != nil {
		return nil, err
	}
	if err := checkHeld(jd, jl, job); err != nil {
		jl.Close()
		return nil, err
	}
	return jl, nil
}

// ownedIn is checkOwnedIn for the files of directory d, as joblog asks.
func ownedIn(d dirh) func(path string, st *unix.Stat_t) error {
	return func(path string, st *unix.Stat_t) error { return checkOwnedIn(d, path, st) }
}

// withBase is l with its header read as job's summary of what prune
// removed; a header that is not one, or names another job (a log copied
// in from another job's folder), is ErrCorrupt, and l is closed.
func withBase(l *joblog.Log, job string) (*jobLog, error) {
	if l.Job != job {
		l.Close()
		return nil, fmt.Errorf("%w: %s is the log of job %q, not of %q (copied from another job's folder?)", ledger.ErrCorrupt, l.Path, l.Job, job)
	}
	base, err := decodeSummary(l.Header, job)
	if err != nil {
		l.Close()
		return nil, l.Corrupt(0, err)
	}
	jl := &jobLog{Log: l}
	if !base.empty() {
		jl.base = &base
	}
	return jl, nil
}

// removed is what prune removed from the log, as its header counts it.
func (l *jobLog) removed() jobSummary {
	if l.base == nil {
		return jobSummary{}
	}
	return *l.base
}

// lastToken is the greatest fencing token a claim of l's job was given:
// its newest claim's (tokens grow in claim order, which is the log's),
// or, when greater or when the log holds no claim, the one its header
// keeps for what prune removed. 0: none ever was.
func (l *jobLog) lastToken() (uint64, error) {
	tok := l.removed().token
	id, off, err := newestIn(l)
	if err != nil || id == "" {
		return tok, err
	}
	e, err := l.ReadAt(off)
	if err != nil {
		return 0, l.Corrupt(off, err)
	}
	r, err := wire.Decode(e.Data, id)
	if err != nil {
		return 0, l.Corrupt(off, err)
	}
	return max(tok, r.Token), nil
}

// logWriter writes a new log of job (joblog.Writer) whose header holds
// what prune removed.
type logWriter struct {
	*joblog.Writer
	jd  dirh
	job string
}

// newLogWriter starts a log of job of generation gen whose header holds
// base.
func newLogWriter(jd dirh, job string, gen int64, base jobSummary) (*logWriter, error) {
	w, err := joblog.NewWriter(jd, job, gen, 0, base.Encode())
	if err != nil {
		return nil, err
	}
	return &logWriter{Writer: w, jd: jd, job: job}, nil
}

// commit puts the new log in place (joblog.Writer.Commit) and returns it
// open for writing.
func (w *logWriter) commit() (*jobLog, error) {
	l, err := w.Commit(ownedIn(w.jd))
	if err != nil {
		return nil, err
	}
	return withBase(l, w.job)
}

// hintOf is the target of an execution's index link: where its newest
// version was (generation, offset) in its job's log.
func hintOf(gen, off int64, job string) string {
	return strconv.FormatInt(gen, 10) + ":" + strconv.FormatInt(off, 10) + ":" + job
}
