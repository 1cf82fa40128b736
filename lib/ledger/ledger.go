package ledger

import (
	"io"
	"time"

	"github.com/tether-sh/tether/lib/proc"
)

// Ledger is the store seam: the state machine's operations, as every
// implementation must offer them. *Store, the flock'd files under one
// directory, is one; a store kept elsewhere (a database) is another, and
// ledgertest.RunConformance holds both to the same contract.
//
// Every transition is a compare-and-swap: it reads the execution,
// checks that the transition is allowed from its state, and records the
// new state in one durable write, or refuses (ErrRefused, naming the
// state) having changed nothing. Of racing callers exactly one wins.
// Terminal states are never rewritten. Errors wrap the package's
// sentinels (ErrRefused, ErrNotFound, ErrBadID, ErrBadInput, ErrCorrupt,
// ErrUnsafeStore, ErrLockTimeout) or are system errors.
type Ledger interface {
	// Claim records a new execution of job (claimed; running at once
	// with o.Child), refused when o.Instant or o.Exclusive forbids it.
	Claim(job string, o ClaimOptions) (Record, error)
	// Fence: claimed → claimed+fenced (handed off; only Adopt starts it).
	Fence(id string) (Record, error)
	// Adopt: claimed+fenced → running, owned by owner.
	Adopt(id string, owner Owner) (Record, error)
	// Start: claimed → running, in-process (owner nil keeps the claimer).
	Start(id string, owner *Owner) (Record, error)
	// SetChild records the payload process of a running execution.
	SetChild(id string, child proc.ID) (Record, error)
	// Finish: running → completed | failed, claimed → failed.
	Finish(id string, status Status, exitCode *int, errMsg string) (Record, error)
	// AbortHandoff: claimed or claimed+fenced → failed, with why.
	AbortHandoff(id, why string) (Record, error)
	// Beat records that a claimed, claimed+fenced or running execution is
	// alive (beat_at) with an optional note; refused once terminal, or
	// with o.IfLatest when its job has a newer execution. (A store with
	// leases renews the lease here.)
	Beat(id string, o BeatOptions) (Record, error)
	// Recover judges every claimed or running execution by its owner
	// (dead: abandoned or unknown) and returns those it changed.
	Recover(grace time.Duration) ([]Record, error)
	// RecoverOne judges execution id alone, with no fence grace.
	RecoverOne(id string) (Record, error)

	// Get returns execution id.
	Get(id string) (Record, error)
	// Latest returns job's newest execution (the last one claimed).
	Latest(job string) (Record, error)
	// List returns the executions matching f, oldest first.
	List(f Filter) ([]Record, error)
	// Prune deletes terminal executions selected by o and returns them;
	// a pruned completed or unknown execution's (job, instant) stays taken.
	Prune(o PruneOptions) ([]Record, error)

	// Summaries returns the summary of each named job (every job when
	// none is named), ordered by job name; a named job with nothing stored
	// has a Summary with only Job set. Read-only.
	Summaries(jobs ...string) ([]Summary, error)

	// OpenOutput keeps the tail of execution id's output: every Write
	// reaches the store before it returns (so it survives a SIGKILL of
	// the writer, not necessarily a power cut), and only the last limit
	// bytes are kept (limit > 0). One writer per execution; not under the
	// store lock. The bytes are opaque to the store.
	OpenOutput(id string, limit int64) (io.WriteCloser, error)
	// Output returns what was kept of execution id's output; ErrNotFound
	// when nothing was kept. Prune deletes a pruned execution's output
	// with it.
	Output(id string) ([]byte, error)

	// Location names the store in messages (a directory, a database).
	Location() string
	// Gone reports whether the store was removed since it was opened.
	Gone() bool
	// Close releases the store; it must not be used after.
	Close() error
}

var _ Ledger = (*Store)(nil)

// Summary is one job's state as `ledger status`, `check` and `metrics`
// read it. A store keeps it per job, so that reading it costs a bounded
// number of reads however many executions are stored.
type Summary struct {
	Job string
	// Latest is the job's newest execution, the last one claimed (ID "":
	// none is stored).
	Latest Record
	// LastFinished is the execution that became terminal last (the
	// greatest FinishedAt; ID "": none).
	LastFinished Record
	// LastSuccess is the Completed execution that finished last (ID "":
	// never).
	LastSuccess Record
	// Live counts the executions claimed, claimed+fenced or running now.
	Live int
	// Runs counts the executions that reached each terminal status, as
	// they finish: prune does not decrease them. A store migrated from an
	// old format starts from what it holds.
	Runs map[Status]uint64
}
