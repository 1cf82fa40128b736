package ledgercmd

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/syntax"
)

// The states of a monitoring plugin (Nagios, Icinga, Sensu, Zabbix), in
// order of gravity, and so its exit codes.
type checkState int

const (
	checkOK checkState = iota
	checkWarning
	checkCritical
	checkUnknown
)

func (s checkState) String() string {
	return [...]string{"OK", "WARNING", "CRITICAL", "UNKNOWN"}[s]
}

type checkCmd struct {
	Job         string        `arg:"" predictor:"job" help:"Job name."`
	MaxAge      cli.Retention `name:"max-age" placeholder:"D" help:"CRITICAL when JOB has not completed successfully within D (a duration, or days: 2d); given, it judges JOB's age instead of its schedule (default: JOB's schedule)."`
	MaxDuration cli.Retention `name:"max-duration" placeholder:"D" help:"WARNING when a live run of JOB has lasted longer than D, CRITICAL past twice D (default: not judged)."`
	Grace       cli.Retention `name:"grace" placeholder:"D" help:"How long past its slot a run may start before JOB is late (default: a tenth of the schedule's period, 1m to 1h)."`
	Failures    cli.Count     `name:"failures" placeholder:"N" help:"CRITICAL once JOB's last N finished runs all failed, WARNING for fewer (default: a failed latest run is a WARNING)."`
}

func (c *checkCmd) Run(inv *invocation) error {
	now := clockNow()
	if err := ledger.ValidJob(c.Job); err != nil {
		return checkReport(inv.tool.Stdout, checkUnknown, err.Error(), "")
	}
	switch {
	case c.MaxAge.D() <= 0 && givenFlag(inv.args, "--max-age"):
		return checkReport(inv.tool.Stdout, checkUnknown, "--max-age must be more than 0", "")
	case c.MaxDuration.D() < 0:
		return checkReport(inv.tool.Stdout, checkUnknown, "--max-duration must not be negative", "")
	case c.Grace.D() < 0:
		return checkReport(inv.tool.Stdout, checkUnknown, "--grace must not be negative", "")
	}
	runs := 0
	if c.Failures > 0 {
		// Live runs between the failures do not break the row: a few
		// more are read, for those.
		runs = int(c.Failures) + stripRuns
	}
	sums, recent, err := inv.summariesRecent(runs, c.Job)
	if err != nil {
		return checkReport(inv.tool.Stdout, checkUnknown, "cannot read the store: "+oneLine(err.Error()), "")
	}
	if len(sums) != 1 {
		return checkReport(inv.tool.Stdout, checkUnknown, fmt.Sprintf("the store returned %d summaries for one job", len(sums)), "")
	}
	o := checkOptions{maxAge: c.MaxAge.D(), maxDuration: c.MaxDuration.D(), grace: c.Grace.D(), failures: int(c.Failures)}
	state, text, perf := judgeCheck(sums[0], recent[c.Job], now, o)
	return checkReport(inv.tool.Stdout, state, text, perf)
}

// givenFlag reports whether args, check's command line, gives flag (as
// "--flag V" or "--flag=V"): a --max-age of 0 is refused, not taken for
// none.
func givenFlag(args []string, flag string) bool {
	for _, a := range args {
		if a == flag || strings.HasPrefix(a, flag+"=") {
			return true
		}
	}
	return false
}

// checkOptions are check's thresholds (0: not given).
type checkOptions struct {
	maxAge, maxDuration, grace time.Duration
	failures                   int
}

// judgeCheck is check's verdict on s at now: the state, the text after it
// and the performance data. recent is JOB's newest executions, oldest
// first, as many as o.failures at least (read only when it is given).
//
//   - CRITICAL: JOB never ran; with --max-age, it never succeeded or its
//     last success finished more than maxAge ago; without, per its
//     schedule, it missed two slots (the slot after its newest run's and
//     the one after that passed their grace with no execution); its last
//     o.failures finished runs all failed; or a live run has lasted more
//     than twice maxDuration.
//   - WARNING: it missed one slot; a live run has lasted more than
//     maxDuration; its latest finished run did not complete (failed,
//     unknown, abandoned) and o.failures does not make that critical
//     (with --max-age: while a success within maxAge keeps it from
//     being critical, as before --failures).
//   - UNKNOWN: no --max-age, and JOB's schedule is unknown (its newest
//     run was not run with --schedule or --every).
//   - OK otherwise.
//
// How long a live run has lasted is known exactly for the job's latest
// execution. A live run older than the latest (Summary counts them, Live)
// was claimed before it, so the latest's claim gives a lower bound: check
// says "at least".
func judgeCheck(s ledger.Summary, recent []ledger.Record, now time.Time, o checkOptions) (checkState, string, string) {
	state := checkOK
	var why []string
	raise := func(to checkState, format string, args ...any) {
		state = max(state, to)
		why = append(why, fmt.Sprintf(format, args...))
	}
	var perf []string
	v := viewOf(s, now, o.grace)
	byAge := o.maxAge > 0

	// The last success is judged first: a store keeps it in the summary
	// after prune removed its record (and every other), as status shows
	// it, and a prune must not make a healthy job alert.
	switch succ := s.LastSuccess; {
	case succ.ID == "" && s.Latest.ID == "" && s.LastFinished.ID == "" && ranBefore(s) == 0:
		raise(checkCritical, "%s never ran", s.Job)
	case !byAge && v.last.ID == "":
		return checkUnknown, fmt.Sprintf("%s has no execution on record (its %d runs were pruned): its schedule is unknown; give --max-age", s.Job, ranBefore(s)), ""
	case !byAge && v.next.IsZero():
		return checkUnknown, fmt.Sprintf("%s's schedule is unknown (its newest run %s was run without --schedule or --every): give --max-age", s.Job, v.last.ID), ""
	case !byAge:
		// Judged by its schedule.
	case succ.ID == "" && s.Runs[ledger.Completed] > 0:
		raise(checkCritical, "%s has no success on record (its %d successful runs were pruned)", s.Job, s.Runs[ledger.Completed])
	case succ.ID == "" && s.Latest.ID == "" && ranBefore(s) > 0:
		raise(checkCritical, "%s has no execution on record (its %d runs were pruned)", s.Job, ranBefore(s))
	case succ.ID == "":
		raise(checkCritical, "%s never succeeded", s.Job)
	default:
		age := max(now.Sub(succ.FinishedAt), 0)
		perf = append(perf, fmt.Sprintf("last_success_age=%ss;;%s;0", secs(age.Round(time.Second)), secs(o.maxAge)))
		if age > o.maxAge {
			raise(checkCritical, "%s last succeeded %s ago (%s), longer than --max-age %s", s.Job, syntax.ShortDuration(age), tableTime(succ.FinishedAt), o.maxAge)
		} else {
			why = append(why, fmt.Sprintf("%s last succeeded %s ago (%s)", s.Job, syntax.ShortDuration(age), tableTime(succ.FinishedAt)))
		}
	}
	if !v.next.IsZero() {
		perf = append(perf, fmt.Sprintf("late=%ss;;;0", secs(v.late.Round(time.Second))))
	}
	if !byAge && !v.next.IsZero() {
		switch {
		case s.Live > 0 || v.late == 0:
			why = append(why, fmt.Sprintf("%s next due %s (%s)", s.Job, tableTime(v.next), v.schedule))
		case now.After(v.next2.Add(v.grace)):
			raise(checkCritical, "%s is late: no run for %s nor %s, due %s ago (%s, grace %s)", s.Job, tableTime(v.next), tableTime(v.next2), syntax.ShortDuration(v.late), v.schedule, v.grace)
		default:
			raise(checkWarning, "%s is late: no run for %s, due %s ago (%s, grace %s)", s.Job, tableTime(v.next), syntax.ShortDuration(v.late), v.schedule, v.grace)
		}
	}
	if f := s.LastFinished; f.ID != "" {
		perf = append(perf, fmt.Sprintf("last_duration=%ss;;;0", secs(lastDuration(f, now).Round(time.Millisecond))))
		streak := failureStreak(recent)
		switch {
		case o.failures > 0:
			perf = append(perf, fmt.Sprintf("failures=%d;1;%d;0", streak, o.failures))
			if streak >= o.failures {
				raise(checkCritical, "its last %d finished runs failed (--failures %d), the latest %s %s", streak, o.failures, f.ID, describeEnd(f))
			} else if streak > 0 {
				raise(checkWarning, "its latest finished run %s %s (%d in a row, CRITICAL at --failures %d)", f.ID, describeEnd(f), streak, o.failures)
			}
		case f.Status != ledger.Completed && (s.LastSuccess.ID != "" || !byAge):
			raise(checkWarning, "its latest finished run %s %s", f.ID, describeEnd(f))
		}
	}
	// A finish later than now was recorded by a clock since stepped back
	// (or a store's host whose clock is ahead): its age cannot be judged,
	// and an age of 0 would read as healthy. Said, not hidden.
	for _, r := range []ledger.Record{s.LastFinished, s.LastSuccess} {
		if r.ID != "" && r.FinishedAt.After(now.Add(ledger.FutureSkew)) {
			raise(checkWarning, "%s finished at %s, %s in the future: the clock was stepped back since, its age cannot be judged", r.ID, tableTime(r.FinishedAt), syntax.ShortDuration(r.FinishedAt.Sub(now)))
			break
		}
	}
	if s.Live > 0 {
		judgeLive(s, now, o.maxDuration, raise, &why, &perf)
	}
	perf = append(perf, fmt.Sprintf("running=%d;;;0", s.Live))
	return state, strings.Join(why, "; "), strings.Join(perf, " ")
}

// judgeLive is check's verdict on s's live runs (s.Live > 0) at now: how
// long the latest has lasted, against maxDuration.
func judgeLive(s ledger.Summary, now time.Time, maxDuration time.Duration, raise func(checkState, string, ...any), why, perf *[]string) {
	live := max(now.Sub(s.Latest.ClaimedAt), 0)
	bound := ""
	if !s.Latest.Status.Terminal() {
		live = lastDuration(s.Latest, now)
		if s.Live > 1 {
			bound = "at least "
		}
	} else {
		bound = "at least "
	}
	warn, crit := "", ""
	if maxDuration > 0 {
		warn, crit = secs(maxDuration), secs(2*maxDuration)
	}
	*perf = append(*perf, fmt.Sprintf("live_age=%ss;%s;%s;0", secs(live.Round(time.Second)), warn, crit))
	switch {
	case maxDuration > 0 && live > 2*maxDuration:
		raise(checkCritical, "a run has been live for %s%s, more than twice --max-duration %s", bound, syntax.ShortDuration(live), maxDuration)
	case maxDuration > 0 && live > maxDuration:
		raise(checkWarning, "a run has been live for %s%s, longer than --max-duration %s", bound, syntax.ShortDuration(live), maxDuration)
	default:
		*why = append(*why, fmt.Sprintf("%d live (for %s%s)", s.Live, bound, syntax.ShortDuration(live)))
	}
}

// secs is d in seconds, as perfdata writes them.
func secs(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) }

// ranBefore is how many runs of s's job ended, pruned ones included.
func ranBefore(s ledger.Summary) uint64 {
	var n uint64
	for _, c := range s.Runs {
		n += c
	}
	return n
}

// describeEnd says how a terminal execution ended, for check's text.
func describeEnd(r ledger.Record) string {
	s := string(r.Status)
	if r.ExitCode != nil {
		s += fmt.Sprintf(" (exit %d)", *r.ExitCode)
	}
	if !r.FinishedAt.IsZero() {
		s += " at " + tableTime(r.FinishedAt)
	}
	return s
}

// checkReport prints check's one line, "STATE: text | perfdata", and
// returns the state as the exit status. A line that cannot be written is
// UNKNOWN (3) too, but returned as the write's error, not as a status: the
// one line on stderr that says so (CONTRACT.md §1.2) is printed for an
// error, and a status of 3 is taken for one already said.
func checkReport(w io.Writer, state checkState, text, perf string) error {
	line := state.String() + ": " + text
	if perf != "" {
		line += " | " + perf
	}
	if _, err := fmt.Fprintln(w, line); err != nil {
		return exit.Errorf(int(checkUnknown), "%w", err)
	}
	return exitStatus(state)
}

// oneLine keeps a message on check's one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// checkUsage is check's exit status for a command line that does not
// parse: UNKNOWN (3), as monitoring plugins exit on a usage error, so that
// a mistyped check is never read as a WARNING or CRITICAL of the job.
// args are ledger's arguments; it reports whether they name check.
func checkUsage(args []string) bool {
	words := ownWords(args)
	return len(words) > 0 && words[0] == "check"
}

func (*checkCmd) Help() string {
	return `A monitoring plugin (Nagios, Icinga, Sensu, Zabbix): prints one line,
"STATE: text | perfdata", and exits 0 OK, 1 WARNING, 2 CRITICAL or
3 UNKNOWN. With no --max-age, JOB is judged by its schedule, the one its
newest run was run under (--schedule or --every): WARNING once the slot
after its newest run's slot has passed by more than --grace (default: a
tenth of the schedule's period, 1m to 1h) with no execution for it;
CRITICAL once the slot after that one has too (two slots missed);
UNKNOWN when the schedule is unknown. With --max-age, JOB is judged by
its age instead, as before: CRITICAL when it never succeeded, or last
succeeded longer than --max-age ago. Either way: CRITICAL when JOB never
ran; a failed (or recovered) latest finished run is a WARNING, and with
--failures N CRITICAL once its last N finished runs all failed (live
runs between them do not count); CRITICAL when a live run has lasted more
than twice --max-duration, WARNING past it; WARNING when its last run
finished in the future (the clock was stepped back since: "last" is the
store's own order, not the times); UNKNOWN when the store cannot be read
(there is none, permission, the database is down) and on bad usage. A
live run older than JOB's latest execution is judged by the latest's
claim: "at least" that old. Perfdata: last_success_age (with
--max-age), late (seconds since the missed slot, 0 when not late; when
the schedule is known), last_duration, failures (with --failures),
live_age (with --max-duration as warn and twice it as crit) and running.

  ledger check backup
  ledger check backup --failures 3 --max-duration 2h
  ledger check backup --max-age 26h`
}
