package ledger

import (
	"fmt"
	"strings"
	"time"

	"github.com/tether-sh/tether/lib/proc"
)

// RemoteJudge judges an owner that this process cannot judge by its PID
// (another host, another PID namespace, an identity it cannot read): a
// store that knows more about such owners (a lease) says Dead or Alive,
// with a phrase saying why; one that knows nothing says Uncertain.
type RemoteJudge func(r Record) (Liveness, string)

// Liveness is what can be said about an execution's owner.
type Liveness int

// The verdicts: an owner that cannot be judged is never taken for dead.
const (
	Uncertain Liveness = Liveness(uncertain)
	Alive     Liveness = Liveness(alive)
	Dead      Liveness = Liveness(dead)
)

// JudgeRecord is recovery's verdict on one claimed or running record, for
// every store: next is r as abandoned (never started) or unknown (started)
// with the error saying why, finished at now, when its owner is gone;
// otherwise next is r unchanged and why says what kept it (a fence within
// grace, a payload that may still run, an owner alive or not judged).
//
// An owner is judged by its PID only where its boot and PID namespace are
// this process's own (see judgeProcess); any other owner, and its payload
// child, are remote's to judge (nil: uncertain, left alone).
func JudgeRecord(r Record, grace time.Duration, now time.Time, remote RemoteJudge) (next Record, why string) {
	if r.Status.Terminal() {
		return r, "it is " + r.State()
	}
	if r.Status == Claimed && r.Fenced && now.Sub(r.FencedAt) < grace {
		return r, fmt.Sprintf("within %v of its fence, awaiting its adopter", grace)
	}
	lv, why := judgeProcess(r.Owner, r.Owner.ID())
	if lv == uncertain && remote != nil {
		// A remote owner's payload is its owner's to watch: the owner is
		// judged as a whole, by what the store knows of it.
		l, w := remote(r)
		lv, why = liveness(l), w
	} else if r.Child.PID != 0 {
		if clv, _ := judgeProcess(r.Owner, r.Child); clv != dead {
			return r, fmt.Sprintf("its payload child %s may still run", r.Child)
		}
		// The payload ran in its own process group (the runners put it
		// there): what it started in that group is still the payload.
		if sameNamespace(r.Owner) {
			if lingers, err := proc.GroupOutlives(r.Child); err != nil || lingers {
				return r, fmt.Sprintf("processes of its payload's group %d still run", r.Child.PID)
			}
		}
	}
	switch lv {
	case alive:
		return r, fmt.Sprintf("its owner %s is alive", r.Owner)
	case uncertain:
		return r, fmt.Sprintf("its owner %s cannot be judged (%s)", r.Owner, why)
	}
	MarkGone(&r, goneWhy(r.Owner, why), now)
	return r, ""
}

// goneWhy words a dead owner's error without saying its PID twice: "owner
// 12@34 on h is gone", or "... is gone (died with boot B)".
func goneWhy(o Owner, why string) string {
	gone := fmt.Sprintf("owner %s is gone", o)
	switch why = strings.TrimPrefix(why, o.ID().String()+" "); why {
	case "", "is gone":
		return gone
	}
	return gone + " (" + why + ")"
}

// MarkGone ends a claimed or running execution whose owner is gone:
// abandoned if it never started, unknown (UnknownSideEffects) if it did,
// with gone ("owner 12@34 on h is gone (why)") leading the error.
func MarkGone(r *Record, gone string, now time.Time) {
	if r.Status == Claimed {
		r.Status = Abandoned
		r.Error = ErrorText(gone + " and the payload never started")
	} else {
		r.Status = Unknown
		r.Error = ErrorText(gone + " without recording a result; " + UnknownSideEffects)
	}
	r.FinishedAt = now
}

// CheckJudge reports whether this process can judge owners at all: where
// /proc belongs to another PID namespace it cannot (the error wraps
// proc.ErrForeignProc), and recovery must refuse.
func CheckJudge() error { return localIdentity().procErr }

// IsLocal reports whether o's PIDs are this process's to judge: the same
// boot and PID namespace.
func IsLocal(o Owner) bool { return sameNamespace(o) }

// DefaultGrace is how long a fenced claim is left alone after its fence
// before recovery may judge its claimer.
const DefaultGrace = 30 * time.Second

// UnknownSideEffects is part of every error recorded for an execution that
// recovery marks unknown.
const UnknownSideEffects = "whether side effects ran is unknown"
