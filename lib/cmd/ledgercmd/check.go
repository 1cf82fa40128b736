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
	MaxAge      cli.Retention `name:"max-age" required:"" placeholder:"D" help:"CRITICAL when JOB has not completed successfully within D (a duration, or days: 2d)."`
	MaxDuration cli.Retention `name:"max-duration" placeholder:"D" help:"WARNING when a live run of JOB has lasted longer than D, CRITICAL past twice D (default: not judged)."`
}

func (c *checkCmd) Run(inv *invocation) error {
	now := time.Now()
	if err := ledger.ValidJob(c.Job); err != nil {
		return checkReport(inv.tool.Stdout, checkUnknown, err.Error(), "")
	}
	if c.MaxAge.D() <= 0 {
		return checkReport(inv.tool.Stdout, checkUnknown, "--max-age must be more than 0", "")
	}
	if c.MaxDuration.D() < 0 {
		return checkReport(inv.tool.Stdout, checkUnknown, "--max-duration must not be negative", "")
	}
	sums, err := inv.summaries(c.Job)
	if err != nil {
		return checkReport(inv.tool.Stdout, checkUnknown, "cannot read the store: "+oneLine(err.Error()), "")
	}
	if len(sums) != 1 {
		return checkReport(inv.tool.Stdout, checkUnknown, fmt.Sprintf("the store returned %d summaries for one job", len(sums)), "")
	}
	state, text, perf := judgeCheck(sums[0], now, c.MaxAge.D(), c.MaxDuration.D())
	return checkReport(inv.tool.Stdout, state, text, perf)
}

// judgeCheck is check's verdict on s at now: the state, the text after it
// and the performance data.
//
//   - CRITICAL: JOB never ran, never succeeded, or its last success finished
//     more than maxAge ago; or a live run has lasted more than twice
//     maxDuration.
//   - WARNING: a live run has lasted more than maxDuration; or the job's
//     latest finished run did not complete (failed, unknown, abandoned)
//     although a success within maxAge keeps it from being critical.
//   - OK otherwise.
//
// How long a live run has lasted is known exactly for the job's latest
// execution. A live run older than the latest (Summary counts them, Live)
// was claimed before it, so the latest's claim gives a lower bound: check
// says "at least".
func judgeCheck(s ledger.Summary, now time.Time, maxAge, maxDuration time.Duration) (checkState, string, string) {
	state := checkOK
	var why []string
	raise := func(to checkState, format string, args ...any) {
		state = max(state, to)
		why = append(why, fmt.Sprintf(format, args...))
	}
	var perf []string
	secs := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) }

	// The last success is judged first: a store keeps it in the summary
	// after prune removed its record (and every other), as status shows
	// it, and a prune must not make a healthy job alert.
	switch succ := s.LastSuccess; {
	case succ.ID == "" && s.Runs[ledger.Completed] > 0:
		raise(checkCritical, "%s has no success on record (its %d successful runs were pruned)", s.Job, s.Runs[ledger.Completed])
	case succ.ID == "" && s.Latest.ID == "" && ranBefore(s) > 0:
		raise(checkCritical, "%s has no execution on record (its %d runs were pruned)", s.Job, ranBefore(s))
	case succ.ID == "" && s.Latest.ID == "" && s.LastFinished.ID == "":
		raise(checkCritical, "%s never ran", s.Job)
	case succ.ID == "":
		raise(checkCritical, "%s never succeeded", s.Job)
	default:
		age := max(now.Sub(succ.FinishedAt), 0)
		perf = append(perf, fmt.Sprintf("last_success_age=%ss;;%s;0", secs(age.Round(time.Second)), secs(maxAge)))
		if age > maxAge {
			raise(checkCritical, "%s last succeeded %s ago (%s), longer than --max-age %s", s.Job, shortDuration(age), tableTime(succ.FinishedAt), maxAge)
		} else {
			why = append(why, fmt.Sprintf("%s last succeeded %s ago (%s)", s.Job, shortDuration(age), tableTime(succ.FinishedAt)))
		}
	}
	if f := s.LastFinished; f.ID != "" {
		perf = append(perf, fmt.Sprintf("last_duration=%ss;;;0", secs(lastDuration(f, now).Round(time.Millisecond))))
		if f.Status != ledger.Completed && s.LastSuccess.ID != "" {
			raise(checkWarning, "its latest finished run %s %s", f.ID, describeEnd(f))
		}
	}
	// A finish later than now was recorded by a clock since stepped back
	// (or a store's host whose clock is ahead): its age cannot be judged,
	// and an age of 0 would read as healthy. Said, not hidden.
	for _, r := range []ledger.Record{s.LastFinished, s.LastSuccess} {
		if r.ID != "" && r.FinishedAt.After(now.Add(ledger.FutureSkew)) {
			raise(checkWarning, "%s finished at %s, %s in the future: the clock was stepped back since, its age cannot be judged", r.ID, tableTime(r.FinishedAt), shortDuration(r.FinishedAt.Sub(now)))
			break
		}
	}
	if s.Live > 0 {
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
		perf = append(perf, fmt.Sprintf("live_age=%ss;%s;%s;0", secs(live.Round(time.Second)), warn, crit))
		switch {
		case maxDuration > 0 && live > 2*maxDuration:
			raise(checkCritical, "a run has been live for %s%s, more than twice --max-duration %s", bound, shortDuration(live), maxDuration)
		case maxDuration > 0 && live > maxDuration:
			raise(checkWarning, "a run has been live for %s%s, longer than --max-duration %s", bound, shortDuration(live), maxDuration)
		default:
			why = append(why, fmt.Sprintf("%d live (for %s%s)", s.Live, bound, shortDuration(live)))
		}
	}
	perf = append(perf, fmt.Sprintf("running=%d;;;0", s.Live))
	return state, strings.Join(why, "; "), strings.Join(perf, " ")
}

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
3 UNKNOWN. CRITICAL when JOB never ran, never succeeded, or last
succeeded longer than --max-age ago, or when a live run has lasted more
than twice --max-duration; WARNING when a live run has lasted longer than
--max-duration, or when the latest finished run failed (or was recovered)
while a success within --max-age keeps JOB from being critical, or when
its last run finished in the future (the clock was stepped back since:
"last" is the store's own order, not the times); UNKNOWN
when the store cannot be read (there is none, permission, the database is
down) and on bad usage. A live run older than JOB's latest execution is
judged by the latest's claim: "at least" that old. Perfdata:
last_success_age, last_duration, live_age (with --max-duration as warn
and twice it as crit) and running.

  ledger check backup --max-age 26h --max-duration 2h`
}
