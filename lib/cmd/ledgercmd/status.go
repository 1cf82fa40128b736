package ledgercmd

import (
	"bufio"
	"errors"
	"os"
	"strings"
	"time"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/location"
)

type statusCmd struct {
	Jobs  []string      `arg:"" optional:"" name:"job" predictor:"job" help:"Jobs to show (default: every job in the store)."`
	Grace cli.Retention `name:"grace" placeholder:"D" help:"A job is late once the slot after its newest run's has passed by more than D with no execution for it (default: a tenth of its schedule's period, 1m to 1h)."`
}

func (c *statusCmd) Run(inv *invocation) error {
	for _, j := range c.Jobs {
		if err := ledger.ValidJob(j); err != nil {
			return err
		}
	}
	if c.Grace.D() < 0 {
		return exit.Errorf(exit.Usage, "--grace must not be negative")
	}
	sums, recent, err := inv.summariesRecent(stripRuns, c.Jobs...)
	if len(sums) == 0 {
		return err
	}
	// Print what could be read, then report what could not (exit 3), as
	// list does.
	w := bufio.NewWriter(inv.tool.Stdout)
	now := clockNow()
	views := make([]jobView, len(sums))
	for i, s := range sums {
		views[i] = viewOf(s, now, c.Grace.D())
	}
	if inv.g.JSON {
		if jerr := writeStatusJSON(w, views, recent, now); jerr != nil {
			return jerr
		}
	} else {
		// The stream the table is written to, not this process's stdout:
		// Main may be given another.
		out, _ := inv.tool.Stdout.(*os.File)
		writeStatusTable(w, views, recent, now, styleFor(os.Getenv, out != nil && isTerminal(out)))
	}
	if ferr := w.Flush(); ferr != nil {
		return ferr
	}
	return err
}

// summaries reads the summaries of jobs (every job when none is named)
// for status, check and metrics: read-only, never creating a store. Run by
// root on a file store another user owns, it reads with that user's rights
// (filestore.ReadAsOwner) and is root again when it returns.
func (inv *invocation) summaries(jobs ...string) ([]ledger.Summary, error) {
	sums, _, err := inv.summariesRecent(0, jobs...)
	return sums, err
}

// summariesRecent is summaries, and with n > 0 the newest n executions of
// each of those jobs too, oldest first, by job: a read bounded by n
// (ledger.Filter.Newest) however many each job holds.
func (inv *invocation) summariesRecent(n int, jobs ...string) ([]ledger.Summary, map[string][]ledger.Record, error) {
	st, err := inv.openWith(location.Options{Existing: true, AsOwner: true})
	if err != nil {
		return nil, nil, err
	}
	sums, err := st.Summaries(jobs...)
	recent := map[string][]ledger.Record{}
	if n > 0 && len(sums) > 0 {
		keep := func(r ledger.Record) error {
			recent[r.Job] = append(recent[r.Job], r)
			return nil
		}
		if len(jobs) == 0 {
			err = errors.Join(err, st.Each(ledger.Filter{Newest: n}, keep))
		}
		for _, s := range sums {
			if len(jobs) > 0 && (s.Latest.ID != "" || s.LastFinished.ID != "") {
				err = errors.Join(err, st.Each(ledger.Filter{Job: s.Job, Newest: n}, keep))
			}
		}
	}
	if cerr := st.Close(); cerr != nil && err == nil {
		return nil, nil, cerr
	}
	return sums, recent, flatten(err)
}

// flatten makes err, which may join errors that join others, one join of
// its distinct leaves, so that each is reported once, on a line of its own.
func flatten(err error) error {
	var leaves []error
	seen := map[string]bool{}
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok && !isWrapped(e) {
			for _, one := range j.Unwrap() {
				walk(one)
			}
			return
		}
		if msg := e.Error(); !seen[msg] {
			seen[msg] = true
			leaves = append(leaves, e)
		}
	}
	if err == nil {
		return nil
	}
	walk(err)
	if len(leaves) == 1 {
		return leaves[0]
	}
	return errors.Join(leaves...)
}

// isWrapped reports whether e, which unwraps to several errors, is one
// error with causes (its own message) rather than a list: errors.Join's
// message is its parts' on lines of their own.
func isWrapped(e error) bool {
	j := e.(interface{ Unwrap() []error })
	var parts []string
	for _, one := range j.Unwrap() {
		parts = append(parts, one.Error())
	}
	return e.Error() != strings.Join(parts, "\n")
}

// lastDuration is how long r ran: from its start (its claim, if it never
// started) to its end, or to now while it is live.
func lastDuration(r ledger.Record, now time.Time) time.Duration {
	from := r.StartedAt
	if from.IsZero() {
		from = r.ClaimedAt
	}
	to := r.FinishedAt
	if to.IsZero() {
		to = now
	}
	if from.IsZero() || to.Before(from) {
		return 0
	}
	return to.Sub(from)
}

// latestOf is the execution status reports for s's job: its latest, or,
// once prune deleted every record of the job, the one that finished last,
// which a file store's summary keeps (a PostgreSQL store's does not: the
// job shows as pruned, never as never-ran).
func latestOf(s ledger.Summary) ledger.Record {
	if s.Latest.ID == "" {
		return s.LastFinished
	}
	return s.Latest
}

func (*statusCmd) Help() string {
	return `One line per job (every job of the store when none is named, in name
order), as systemctl list-timers prints timers: LAST, when its newest
execution started (its claim, if it never started), and AGO, how long
ago; RESULT, how it ended: its status and exit code (completed:0,
failed:3, unknown, abandoned; claimed or running while live); STATE: the
first of running (an execution is live), never (none ever), late (its
schedule's slot after the newest run's slot passed by more than --grace
with no execution for it), failing (its latest finished run did not
complete), ok; NEXT, that slot ("-" when the schedule is unknown: the
newest run was run without --schedule or --every); DURATION, how long
the newest ran (so far, while it is live); RUNS and DURATIONS, a strip of
its newest 16 runs, oldest left: one glyph per outcome (. completed,
F failed, ? unknown, - abandoned, * live) and one bar per duration,
scaled to the longest. On a terminal the strip is drawn with check
marks, crosses and block bars (U+2581 to U+2588) when the locale is UTF-8, and outcomes and states are coloured
(green, red, yellow, cyan for live) unless NO_COLOR is set (no-color.org)
or TERM is dumb; in a pipe or a file it is plain ASCII, whatever the
locale. A job whose records were all pruned shows its run that finished
last, which the store's summary keeps. --json prints one object per job with every key, null when
unknown: job, status, id, finished_at, duration_seconds, exit_code,
last_success_at, running, runs (counts by terminal status), started_at,
state, schedule, next_at, grace_seconds, late_seconds and recent (the
strip's runs: id, status, exit_code, started_at, duration_seconds).
Reads a per-job summary and each job's newest 16 executions, never every
record; creates no store (3 when there is none). Root may read a file
store another user owns: it reads it with that user's rights; so may,
read-only, a member of a group the owner lets read the store (every file
but the lock: chgrp -R ops DIR; find DIR ! -path DIR/lock -exec chmod
g+rX {} +). latest, show, list and output too.

  ledger status
  ledger status backup report --json`
}
