package ledgercmd

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/location"
)

type statusCmd struct {
	Jobs []string `arg:"" optional:"" name:"job" predictor:"job" help:"Jobs to show (default: every job in the store)."`
}

func (c *statusCmd) Run(inv *invocation) error {
	for _, j := range c.Jobs {
		if err := ledger.ValidJob(j); err != nil {
			return err
		}
	}
	sums, err := inv.summaries(c.Jobs...)
	if len(sums) == 0 {
		return err
	}
	// Print what could be read, then report what could not (exit 3), as
	// list does.
	w := bufio.NewWriter(inv.tool.Stdout)
	now := time.Now()
	if inv.g.JSON {
		if jerr := writeStatusJSON(w, sums, now); jerr != nil {
			return jerr
		}
	} else {
		writeStatusTable(w, sums, now)
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
	st, err := inv.openWith(location.Options{Existing: true, AsOwner: true})
	if err != nil {
		return nil, err
	}
	sums, err := st.Summaries(jobs...)
	if cerr := st.Close(); cerr != nil && err == nil {
		return nil, cerr
	}
	return sums, flatten(err)
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

// statusJSON is one job of status --json: every key present, null when
// unknown, as records are.
type statusJSON struct {
	Job             string            `json:"job"`
	Status          *string           `json:"status"`
	ID              *string           `json:"id"`
	FinishedAt      *time.Time        `json:"finished_at"`
	DurationSeconds *float64          `json:"duration_seconds"`
	ExitCode        *int              `json:"exit_code"`
	LastSuccessAt   *time.Time        `json:"last_success_at"`
	Running         int               `json:"running"`
	Runs            map[string]uint64 `json:"runs"`
}

func writeStatusJSON(w io.Writer, sums []ledger.Summary, now time.Time) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, s := range sums {
		o := statusJSON{Job: s.Job, Running: s.Live, Runs: map[string]uint64{}}
		for _, st := range ledger.Statuses {
			if st.Terminal() {
				o.Runs[string(st)] = s.Runs[st]
			}
		}
		if r := latestOf(s); r.ID != "" {
			state, id := r.State(), r.ID
			o.Status, o.ID = &state, &id
			if !r.FinishedAt.IsZero() {
				t := r.FinishedAt.UTC()
				o.FinishedAt = &t
			}
			if !r.ClaimedAt.IsZero() {
				d := lastDuration(r, now).Seconds()
				o.DurationSeconds = &d
			}
			o.ExitCode = r.ExitCode
		}
		if r := s.LastSuccess; r.ID != "" {
			t := r.FinishedAt.UTC()
			o.LastSuccessAt = &t
		}
		if err := enc.Encode(o); err != nil {
			return err
		}
	}
	return nil
}

func writeStatusTable(w io.Writer, sums []ledger.Summary, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tSTATUS\tFINISHED\tDURATION\tEXIT\tLAST-SUCCESS\tRUNNING")
	for _, s := range sums {
		status, finished, duration, exit := "never-ran", "-", "-", "-"
		if ranBefore(s) > 0 {
			// Every record pruned, and the store keeps no last run.
			status = "pruned"
		}
		if r := latestOf(s); r.ID != "" {
			status = r.State()
			finished = tableTime(r.FinishedAt)
			duration = shortDuration(lastDuration(r, now))
			if r.ExitCode != nil {
				exit = strconv.Itoa(*r.ExitCode)
			}
		}
		success := "never"
		if s.LastSuccess.ID != "" {
			success = tableTime(s.LastSuccess.FinishedAt)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\n", s.Job, status, finished, duration, exit, success, s.Live)
	}
	tw.Flush()
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

// shortDuration prints d to a precision a person reads: 250ms, 3.2s, 4m10s.
func shortDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

func (*statusCmd) Help() string {
	return `One line per job (every job of the store when none is named, in name
order): its latest execution's status, when it finished, how long it ran
(so far, while it is live), its exit code, when the job last completed
successfully, and how many of its executions are live (claimed,
claimed+fenced or running). A named job that never ran shows as
never-ran; one whose records were all pruned, its run that finished
last, which a file store's summary keeps (in a PostgreSQL store, as
pruned). --json prints one object per job: job, status, id,
finished_at, duration_seconds, exit_code, last_success_at, running and
runs (counts by terminal status), null when unknown. Reads a per-job
summary, never every record; creates no store (3 when there is none).
Root may read a file store another user owns: it reads it with that
user's rights; so may, read-only, a member of a group the owner lets
read the store (every file but the lock: chgrp -R ops DIR; find DIR !
-path DIR/lock -exec chmod g+rX {} +). latest, show, list and output too.

  ledger status
  ledger status backup report --json`
}
