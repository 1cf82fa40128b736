package ledgercmd

import (
	"time"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/report"
)

// What status, check and metrics say of a job beyond its summary: its
// state, and, when its schedule is known, the slot due next and how late
// it is.

// The states status shows, in the order it judges them: the first that
// holds is the job's.
const (
	stateRunning = "running" // an execution is live (claimed, handed off or running)
	stateNever   = "never"   // no execution, ever
	stateLate    = "late"    // the slot after the newest run's passed its grace with none
	stateFailing = "failing" // the newest terminal execution did not complete
	stateOK      = "ok"
)

// stripRuns is how many of a job's newest executions status reads and
// shows in its strip: what fits beside the columns on a terminal of 160
// columns, and a bounded read whatever the job holds.
const stripRuns = 16

// jobView is what status, check and metrics judge of one job at now.
type jobView struct {
	sum  ledger.Summary
	last ledger.Record // latestOf(sum): ID "" when none is on record
	// schedule is the newest record's schedule (the newest finished
	// one's while the newest is live and has none; "" unknown); next the
	// slot due after the newest run's (zero when the schedule is
	// unknown or does not read), next2 the one after it.
	schedule    string
	next, next2 time.Time
	grace       time.Duration
	// late is how long ago next was due once its grace passed with no
	// execution for it (0: not late).
	late  time.Duration
	state string // "" when nothing is on record but the job ran (pruned)
}

// viewOf judges s at now; grace 0 takes the default (defaultGrace).
func viewOf(s ledger.Summary, now time.Time, grace time.Duration) jobView {
	v := jobView{sum: s, last: latestOf(s)}
	due := report.DueOf(s)
	v.schedule, v.next, v.next2 = due.Schedule, due.Next, due.After
	v.grace = grace
	if v.grace <= 0 {
		v.grace = defaultGrace(v.next, v.next2)
	}
	// A live run is taken for the slot's: how long it may last is
	// check --max-duration's to judge.
	if s.Live == 0 && !v.next.IsZero() && now.After(v.next.Add(v.grace)) {
		v.late = now.Sub(v.next)
	}
	switch {
	case s.Live > 0:
		v.state = stateRunning
	case v.last.ID == "" && ranBefore(s) > 0:
		v.state = ""
	case v.last.ID == "":
		v.state = stateNever
	case v.late > 0:
		v.state = stateLate
	case s.LastFinished.ID != "" && s.LastFinished.Status != ledger.Completed:
		v.state = stateFailing
	default:
		v.state = stateOK
	}
	return v
}

// defaultGrace is how long past its slot a run may start before the job
// is late when no --grace is given: a tenth of the schedule's period (the
// time between next and the slot after it), at least a minute (a cron
// daemon that starts a tick a few seconds late, a busy host) and at most
// an hour (a daily job an hour late is worth knowing of).
func defaultGrace(next, next2 time.Time) time.Duration {
	period := next2.Sub(next)
	return min(max(period/10, time.Minute), time.Hour)
}

// failureStreak is how many of recent's terminal executions, counted from
// the newest (live ones passed over), did not complete in a row; recent is
// oldest first.
func failureStreak(recent []ledger.Record) int {
	n := 0
	for i := len(recent) - 1; i >= 0; i-- {
		r := recent[i]
		switch {
		case !r.Status.Terminal():
			continue
		case r.Status == ledger.Completed:
			return n
		}
		n++
	}
	return n
}
