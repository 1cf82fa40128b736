package report

import (
	"sync"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/schedule"
)

// Due is a job's schedule as its records say it and the slots due after
// its newest run: what ledger status, check, metrics and the report all
// show of it.
type Due struct {
	// Schedule is the newest run's, or, while that run is live and was
	// claimed by hand with none, the newest finished run's ("" unknown).
	Schedule string
	// Next is the slot due after the newest run's slot (which may be
	// past: the job is then late), After the one after it; both zero
	// when the schedule is unknown or does not read here (a newer
	// tether's, a zone this host lacks).
	Next, After time.Time
}

// DueOf reads s's schedule and its next slots.
func DueOf(s ledger.Summary) Due {
	last := s.Latest
	if last.ID == "" {
		last = s.LastFinished
	}
	d := Due{Schedule: last.Schedule}
	if d.Schedule == "" && last.ID != "" && !last.Status.Terminal() {
		// A live run claimed by hand (ledger claim) says nothing of the
		// job's schedule: the newest finished run's still holds.
		d.Schedule = s.LastFinished.Schedule
	}
	if sched := parsed(d.Schedule); sched != nil {
		if base := slotOf(last); !base.IsZero() {
			d.Next = sched.Next(base)
			if !d.Next.IsZero() {
				d.After = sched.Next(d.Next)
			}
		}
	}
	return d
}

// slotOf is the instant r stands for: its slot (--instant, --schedule),
// else when it started, else when it was claimed.
func slotOf(r ledger.Record) time.Time {
	switch {
	case r.ID == "":
		return time.Time{}
	case !r.Instant.IsZero():
		return r.Instant
	case !r.StartedAt.IsZero():
		return r.StartedAt
	}
	return r.ClaimedAt
}

// schedules keeps what parsed read, for the process: a hundred jobs of
// one schedule load its zone once.
var schedules sync.Map // spec → *schedule.Schedule, nil when it does not read

// parsed reads a recorded schedule; nil when there is none or it does not
// read.
func parsed(spec string) *schedule.Schedule {
	if spec == "" {
		return nil
	}
	if s, ok := schedules.Load(spec); ok {
		return s.(*schedule.Schedule)
	}
	var out *schedule.Schedule
	if s, err := schedule.Parse(spec, ""); err == nil && !s.IsZero() {
		out = &s
	}
	schedules.Store(spec, out)
	return out
}
