package ledger

import (
	"strings"
	"time"
)

// HoldVerdict is Ledger.Holds' judgement, the same for every store: nil
// while r still holds its job, else a refusal (ErrRefused) saying why. r
// holds its job while it is claimed or running, no claim of the job was
// given a token greater than r's (newest, the greatest the store gave),
// its lease, if it has one, has not run out by the store's clock (now),
// and its owner, where this process can judge it by its PID, is alive.
// The caller is about to act for r (a payload before a write that
// matters): anything that means another execution may act for the job
// now is a no.
func HoldVerdict(r Record, newest uint64, now time.Time) error {
	switch {
	case r.Status.Terminal():
		return Refusedf("execution %s of %s is %s", r.ID, r.Job, r.State())
	case newest > r.Token:
		return Refusedf("execution %s of %s has token %d; a newer claim of the job has %d", r.ID, r.Job, r.Token, newest)
	case !r.LeaseUntil.IsZero() && !now.Before(r.LeaseUntil):
		return Refusedf("execution %s of %s: its lease ran out at %s (store's clock %s)", r.ID, r.Job, FormatTime(r.LeaseUntil), FormatTime(now))
	}
	if next, _ := JudgeRecord(r, 0, now, nil); next.Status.Terminal() {
		gone, _, _ := strings.Cut(next.Error, ";")
		return Refusedf("execution %s of %s: %s", r.ID, r.Job, gone)
	}
	return nil
}
