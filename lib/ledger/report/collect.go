package report

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/location"
)

// Defaults of Options.
const (
	DefaultRuns = 50
	DefaultTail = 16 << 10
	// MaxRuns bounds Options.Runs: a page of a thousand runs a job is
	// already more than a person reads.
	MaxRuns = 1000
	// maxLive bounds the live executions a job's section lists.
	maxLive = 100
)

// Options says how much of each job Collect reads.
type Options struct {
	// Runs is how many of each job's newest executions the timeline and
	// the chart show (0: DefaultRuns; at most MaxRuns).
	Runs int
	// Tail is how many bytes of the newest failure's kept output are
	// shown, its last (0: DefaultTail).
	Tail int64
	// Now is the time of the report (zero: time.Now()).
	Now time.Time
	// Version is the tether that made the page, shown in its footer.
	Version string
}

// Page is what one report shows.
type Page struct {
	// Store is the store's location, as messages show it: a URL
	// without its password (location.Redact).
	Store     string
	Generated time.Time
	Version   string
	Runs      int // Options.Runs in effect
	Jobs      []Job
	// Problems are what could not be read, one line each; the page
	// shows the rest.
	Problems []string
}

// Job is one job's section.
type Job struct {
	Summary ledger.Summary
	// Recent are its newest executions, at most Options.Runs of them,
	// oldest first.
	Recent []ledger.Record
	// Live are its claimed and running executions (at most 100), oldest
	// first, however old.
	Live []ledger.Record
	// Failure is the newest failed or unknown execution of Recent (ID "":
	// none), and Output the tail of what was kept of its output.
	Failure ledger.Record
	Output  Tail
	// Schedule is the schedule its newest execution was run under, as
	// recorded ("": none known); Next its next slot after Options.Now
	// (for an @every, the period after the newest execution's start),
	// zero when there is none or the schedule does not read.
	Schedule string
	Next     time.Time
}

// Tail is the end of a kept output.
type Tail struct {
	Bytes []byte
	// Skipped counts the bytes before Bytes that are not shown.
	Skipped int64
	// Missing says why there is nothing to show ("": something was kept).
	Missing string
}

// Collect reads the page of jobs (every job of st when none is named)
// from st. Each job costs its summary, a read of its newest o.Runs
// executions and of its live ones, and one read of a kept output:
// bounded by o.Runs and o.Tail, not by how many executions the store
// holds. What cannot be read is on the page (Problems) and in the error
// returned with it.
func Collect(st ledger.Ledger, jobs []string, o Options) (*Page, error) {
	o = o.withDefaults()
	// A store whose summaries cannot be read still gets a page, which
	// says so: a mailed report that is empty would say nothing.
	sums, err := st.Summaries(jobs...)
	p := &Page{Store: location.Redact(st.Location()), Generated: o.Now, Version: o.Version, Runs: o.Runs}
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, s := range sums {
		j, err := collectJob(st, s, o)
		if err != nil {
			errs = append(errs, err)
		}
		p.Jobs = append(p.Jobs, j)
	}
	for _, e := range errs {
		for _, m := range leaves(e) {
			if !slices.Contains(p.Problems, m) {
				p.Problems = append(p.Problems, m)
			}
		}
	}
	return p, errors.Join(errs...)
}

func (o Options) withDefaults() Options {
	if o.Runs <= 0 {
		o.Runs = DefaultRuns
	}
	o.Runs = min(o.Runs, MaxRuns)
	if o.Tail <= 0 {
		o.Tail = DefaultTail
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	return o
}

// collectJob reads s's job: its newest o.Runs executions (Filter.Newest:
// a cost bounded by o.Runs, not by what the job holds), its live ones (the
// stores' index of live executions), the newest failure among the first,
// and that failure's output.
func collectJob(st ledger.Ledger, s ledger.Summary, o Options) (Job, error) {
	j := Job{Summary: s}
	due := DueOf(s)
	j.Schedule, j.Next = due.Schedule, due.Next
	werr := st.Each(ledger.Filter{Job: s.Job, Newest: o.Runs}, func(r ledger.Record) error {
		j.Recent = append(j.Recent, r)
		if r.Status == ledger.Failed || r.Status == ledger.Unknown {
			j.Failure = r
		}
		return nil
	})
	for _, status := range []ledger.Status{ledger.Claimed, ledger.Running} {
		err := st.Each(ledger.Filter{Job: s.Job, Status: status}, func(r ledger.Record) error {
			if len(j.Live) < maxLive {
				j.Live = append(j.Live, r)
			}
			return nil
		})
		werr = errors.Join(werr, err)
	}
	slices.SortStableFunc(j.Live, func(a, b ledger.Record) int { return a.ClaimedAt.Compare(b.ClaimedAt) })
	if j.Failure.ID != "" {
		out, err := readTail(st, j.Failure.ID, o.Tail)
		j.Output = out
		if err != nil {
			werr = errors.Join(werr, fmt.Errorf("output of %s: %w", j.Failure.ID, err))
		}
	}
	return j, werr
}

// readTail reads the last n bytes of id's kept output, holding no more
// than n + one buffer whatever size was kept.
func readTail(st ledger.Ledger, id string, n int64) (Tail, error) {
	rc, err := st.Output(id)
	switch {
	case errors.Is(err, ledger.ErrOutputLost):
		return Tail{Missing: "its output was lost in a crash"}, nil
	case errors.Is(err, ledger.ErrNotFound):
		return Tail{Missing: "no output was kept (it wrote nothing, or ran with --keep-output 0, or on a terminal)"}, nil
	case err != nil:
		return Tail{Missing: "its output could not be read"}, err
	}
	defer rc.Close()
	var t Tail
	buf := make([]byte, 32<<10)
	for {
		k, err := rc.Read(buf)
		t.Bytes = append(t.Bytes, buf[:k]...)
		if over := int64(len(t.Bytes)) - n; over > 0 {
			t.Skipped += over
			t.Bytes = append(t.Bytes[:0], t.Bytes[over:]...)
		}
		if err == io.EOF {
			return t, nil
		}
		if err != nil {
			t.Missing = "its output could not be read to its end"
			return t, err
		}
	}
}

// leaves is err's messages, one per error it joins (errors.Join's
// parts; an error with several causes and a message of its own is one).
func leaves(err error) []string {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out, parts []string
		for _, e := range j.Unwrap() {
			parts = append(parts, e.Error())
			out = append(out, leaves(e)...)
		}
		if err.Error() == strings.Join(parts, "\n") {
			return out
		}
	}
	return []string{err.Error()}
}
