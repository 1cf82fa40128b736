package ledgercmd

import (
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/execution"
	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/schedule"
	"github.com/tether-sh/tether/lib/syntax"
)

// scheduled are the flags of a runner that knows its schedule: run and
// spawn.
type scheduled struct {
	Schedule string       `placeholder:"EXPR" help:"Cron expression (5 fields, or @daily, @hourly...) the job runs on: the run stands for its slot at or just before now (or at most 10s after, so that a host whose clock is a little behind names the slot its peers do), as --instant names one, and the schedule is recorded for status, check and metrics. A slot runs at most once: once it has an execution that ran, failed included, a later tick is refused as expected (never started ones may be retried). A tick more than a minute after the slot is not due (refused as expected) unless --catch-up. Zone: --tz, else a CRON_TZ=Zone prefix of EXPR, else $CRON_TZ, else the local zone; DST as cronie: a time skipped runs once after the change, a time repeated runs once."`
	TZ       string       `name:"tz" placeholder:"ZONE" help:"With --schedule: the time zone of EXPR (Europe/Berlin, UTC)."`
	CatchUp  bool         `name:"catch-up" help:"With --schedule: run the newest slot at or before now if it has no execution, however old (as anacron and systemd's Persistent=): after downtime, one run for the newest missed slot, never a backlog. For a frequent cron line or @reboot."`
	Jitter   cli.Duration `placeholder:"D" help:"Wait a delay below D before the claim, random per job and stable per host (a hash of /etc/machine-id and JOB, as systemd's RandomizedDelaySec with FixedRandomDelay), counted within --deadline; said unless --quiet. A TERM or INT during it ends the run, nothing claimed (128+N)."`
}

// dueWindow is how long after its slot a tick is due without --catch-up:
// the minute of cron's granularity, in which a daemon late under load
// still starts the line.
const dueWindow = time.Minute

// claim resolves the flags into what c claims at now: the slot and the
// schedule recorded. notDue, when set, is the expected refusal of a tick
// that is not the slot's; err is a usage error.
func (f scheduled) claim(c jobClaim, now time.Time) (cl execution.Claim, notDue error, err error) {
	cl = c.claim()
	if f.Schedule == "" {
		if f.TZ != "" || f.CatchUp {
			return cl, nil, exit.Errorf(exit.Usage, "--tz and --catch-up are about a --schedule: give one")
		}
		if cl.Every > 0 {
			cl.Schedule = schedule.Every(cl.Every).String()
		}
		return cl, nil, nil
	}
	if !c.Instant.t.IsZero() || c.Every > 0 {
		return cl, nil, exit.Errorf(exit.Usage, "--schedule chooses the slot: give it without --instant or --every")
	}
	tz := f.TZ
	if spec := strings.TrimSpace(f.Schedule); tz == "" && !strings.HasPrefix(spec, "CRON_TZ=") && !strings.HasPrefix(spec, "TZ=") {
		// As cronie: a crontab's CRON_TZ= line is in its jobs' environment.
		tz = os.Getenv("CRON_TZ")
	}
	s, err := schedule.Parse(f.Schedule, tz)
	if err != nil {
		return cl, nil, exit.Errorf(exit.Usage, "%v", err)
	}
	if s.Period() != 0 {
		return cl, nil, exit.Errorf(exit.Usage, "--schedule %q: @every has no slots: use --every %v", f.Schedule, s.Period())
	}
	cl.Schedule, cl.Once = s.String(), true
	cl.Instant = s.Slot(now)
	if cl.Instant.IsZero() {
		return cl, ledger.NotDuef("%s has no slot in the five years before %s", s, ledger.FormatTime(now)), nil
	}
	if late := now.Sub(cl.Instant); !f.CatchUp && late >= dueWindow {
		return cl, ledger.NotDuef("its slot %s of %s is not due (%v past; the next is %s; --catch-up runs a missed slot)",
			ledger.FormatTime(cl.Instant), s, late.Round(time.Second), ledger.FormatTime(s.Next(now))), nil
	}
	return cl, nil, nil
}

// checkJitter refuses a --jitter that is not within the deadline.
func (f scheduled) checkJitter(deadline time.Duration) error {
	if f.Jitter.D() < 0 {
		return exit.Errorf(exit.Usage, "--jitter %v: want a positive duration", f.Jitter.D())
	}
	if deadline > 0 && f.Jitter.D() >= deadline {
		return exit.Errorf(exit.Usage, "--jitter %v is counted within --deadline %v: want it shorter", f.Jitter.D(), deadline)
	}
	return nil
}

// jitterDelay is the delay of --jitter d for job on the host whose
// identity is host: a hash of both, modulo d.
func jitterDelay(host, job string, d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(host))
	h.Write([]byte{0})
	h.Write([]byte(job))
	return time.Duration(h.Sum64() % uint64(d))
}

// hostIdentity is what makes a host's jitter its own: /etc/machine-id
// (systemd's, stable across boots), else the boot id, else the host name.
func hostIdentity() string {
	for _, f := range []string{"/etc/machine-id", "/var/lib/dbus/machine-id", "/proc/sys/kernel/random/boot_id"} {
		if b, err := os.ReadFile(f); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			return strings.TrimSpace(string(b))
		}
	}
	h, _ := os.Hostname()
	return h
}

// delay waits out --jitter's delay for job before the claim, said (by
// say) unless quiet; a stop signal on sigs ends it, nothing claimed: the
// error is the 128+N exit of a runner interrupted. It returns the delay.
func (f scheduled) delay(job, verb string, sigs <-chan os.Signal, quiet bool, say func(string, ...any)) (time.Duration, error) {
	d := jitterDelay(hostIdentity(), job, f.Jitter.D())
	if d <= 0 {
		return 0, nil
	}
	if !quiet {
		say("%s %s in %v (--jitter %v: this host's delay for it)", verb, job, d.Round(time.Millisecond), f.Jitter.D())
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return d, nil
	case sig := <-sigs:
		s, _ := sig.(syscall.Signal)
		return d, exit.Errorf(exit.ForSignal(s), "not %s %s: %s during the --jitter delay, nothing claimed", verb, job, syntax.SignalName(s))
	}
}

// everySkew is how far a store's clock (a database server's) may be
// from this host's for everyHeld to judge by this host's: a tick that
// close to due goes to the claim, which judges on the store's clock.
const everySkew = time.Minute

// everyHeld reports, before the payload is forked and held for the
// claim, whether --every's period surely still holds (the last success
// started well within it, by now): a refused tick then costs a summary's
// read. The claim judges again, on the store's clock, whatever this says.
func everyHeld(st ledger.Ledger, cl execution.Claim, now time.Time) error {
	if cl.Every <= 2*everySkew {
		return nil
	}
	sums, err := st.Summaries(cl.Job)
	if err != nil || len(sums) != 1 || sums[0].LastSuccess.ID == "" {
		return nil
	}
	r := sums[0].LastSuccess
	from := ledger.EveryFrom(r)
	if since := now.Sub(from); since >= 0 && since < cl.Every-ledger.EverySlack(cl.Every)-everySkew {
		return fmt.Errorf("cannot claim %s every %v: %w", cl.Job, cl.Every,
			ledger.NotDuef("execution %s completed, started %v ago (at %s), less than %v", r.ID, since.Round(time.Millisecond), ledger.FormatTime(from), cl.Every))
	}
	return nil
}

// slotTaken reports, before the payload is forked and held for the claim
// and before a --jitter delay, whether the slot of cl already ran (its
// newest execution holds it for good): the claim would be refused, and a
// refused tick must cost no more than a read. The claim judges again,
// under the lock, whatever this says.
func slotTaken(st ledger.Ledger, cl execution.Claim) error {
	if !cl.Once {
		return nil
	}
	r, err := st.Latest(cl.Job)
	if errors.Is(err, ledger.ErrNotFound) || err != nil {
		return nil
	}
	o := ledger.ClaimOptions{Instant: cl.Instant, Once: true}
	if r.Instant.Equal(cl.Instant) && r.Status.Terminal() && ledger.BlocksSlot(r, o) {
		return fmt.Errorf("cannot claim %s for %s: %w", cl.Job, ledger.FormatTime(cl.Instant), ledger.Refusedf("execution %s is %s", r.ID, r.State()))
	}
	return nil
}
