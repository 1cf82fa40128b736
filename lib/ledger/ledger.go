package ledger

import (
	"context"
	"io"
	"time"

	"github.com/tether-sh/tether/lib/proc"
)

// Ledger is the store seam: the state machine's operations, as every
// implementation must offer them. lib/ledger/filestore's, the flock'd
// files under one directory, is one; lib/ledger/pgstore's, a database, is
// another, and ledgertest.RunConformance holds both to the same contract.
//
// Every transition is a compare-and-swap: it reads the execution,
// checks that the transition is allowed from its state, and records the
// new state in one durable write, or refuses (ErrRefused, naming the
// state) having changed nothing. Of racing callers exactly one wins.
// Terminal states are never rewritten. Errors wrap the package's
// sentinels (ErrRefused, ErrNotFound, ErrBadID, ErrBadInput, ErrCorrupt,
// ErrUnsafeStore, ErrLockTimeout, ErrUnavailable, ErrOneHost) or are
// system errors.
//
// It is the whole contract: a caller never asks a store for more by type
// assertion, so that no caller can forget a behaviour one store needs (a
// runner that did not keep its lease would lose it). What only some
// stores have work for is an operation of every store all the same, and
// a store with nothing to do does what the operation's comment says:
// nothing, or ErrOneHost. A store of one host
// (the file store) judges owners by PID, keeps no leases and no late
// results, and has a folder on this host for handoffs and boot notes; a
// store that hosts share (a database) keeps leases and late results,
// recovers a host declared dead, and has no folder here.
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
	// FinishRetrying is Finish for a runner recording its payload's
	// result: a store that can be out of reach for a moment (a database)
	// tries again, with backoff, while the execution may still be the
	// runner's (PostgreSQL: for the lease or its DefaultLease, whichever
	// is longer), and a retry refused with the record already holding
	// this result is success. It blocks that long at most. A store that
	// is never out of reach (the file store) does Finish, once.
	FinishRetrying(id string, status Status, exitCode *int, errMsg string) (Record, error)
	// RecordLate keeps a result that came too late, refused because
	// recovery ended the execution first, on its record as Late, the
	// status unchanged, when CanKeepLate allows it (only the first late
	// result is kept); it reports whether it kept this one. A store that
	// keeps no late results (the file store) keeps nothing: false, nil.
	// Callers apply the whole rule with KeepLate.
	RecordLate(id string, status Status, exitCode *int, errMsg string) (bool, error)
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
	// RecoverHost declares host dead for good: every claimed or running
	// execution owned there (never one this process can judge by PID)
	// becomes abandoned or unknown now, lease or not; it returns those it
	// changed. This host, or no name, is refused (ErrBadInput). A store
	// of one host (the file store) holds no other host's executions and
	// refuses every host with ErrOneHost (which wraps ErrBadInput),
	// changing nothing.
	RecoverHost(host string) ([]Record, error)

	// KeepLease keeps execution id's lease, renewing it until ctx is
	// done or the execution ended, and blocks until then: run it in a
	// goroutine of its own. When it cannot renew in time it calls k.Lost
	// k.Stop before the lease would run out, and returns: the runner then
	// stops its payload, so that it is gone before another host may judge
	// it (the lease math: lease.go). A store or handle that keeps
	// no lease (the file store, which judges owners by PID; a database
	// handle opened without one) has nothing to keep: it returns at once
	// and never calls k.Lost.
	KeepLease(ctx context.Context, id string, k Keep)

	// Holds returns execution id and whether it still holds its job, as
	// HoldVerdict judges it: nil, or a refusal saying why not (ErrRefused),
	// with newest the greatest token the store gave a claim of the job
	// and now the store's clock (a database's, one statement). Read-only;
	// an error other than a refusal means it cannot tell.
	Holds(id string) (Record, error)
	// Get returns execution id.
	Get(id string) (Record, error)
	// Latest returns job's newest execution (the last one claimed).
	Latest(job string) (Record, error)
	// Each calls fn with each execution matching f, oldest first, one at
	// a time: a store holds a bounded number of records in memory
	// whatever it stores (List collects them). fn's first error ends the
	// walk and is returned as it is. fn must not call the store. Records
	// that cannot be read are passed over and reported together after the
	// others (wrapping ErrCorrupt). The walk need not be one snapshot:
	// an execution that changes meanwhile may be seen in either state.
	Each(f Filter, fn func(Record) error) error
	// Prune deletes the terminal executions o selects and returns how
	// many; a pruned completed or unknown execution's (job, instant) stays
	// taken. With an error it returns how many went before it: a job that
	// could not be pruned (a full disk) loses nothing and is not counted,
	// and a database store's prune, one transaction, counts none. fn, if
	// not nil, is called with each that went, as it was before the
	// prune, job by job (jobs in name order) and oldest first within a
	// job, in bounded memory however many there are (Pruned collects
	// them): a file store once a job's deletion is done, a database store
	// within its transaction (a commit that fails has passed executions
	// that stay). A failing fn is not called again; the prune goes on, and
	// fn's error is returned with the count. fn must not call the store.
	Prune(o PruneOptions, fn func(Record) error) (int, error)

	// Summaries returns the summary of each named job (every job when
	// none is named), ordered by job name; a named job with nothing stored
	// has a Summary with only Job set. Read-only.
	Summaries(jobs ...string) ([]Summary, error)

	// OpenOutput keeps the tail of execution id's output: every Write
	// reaches the store before it returns (so it survives a SIGKILL of
	// the writer, not necessarily a power cut), and only the last limit
	// bytes are kept (limit > 0). One writer per execution; not under the
	// store lock. The bytes are opaque to the store. Its errors do not
	// name the execution: the caller says whose output it could not keep.
	OpenOutput(id string, limit int64) (io.WriteCloser, error)
	// Output opens what was kept of execution id's output, to be read to
	// its end and closed; ErrNotFound when nothing was kept. The reader
	// holds no more of it in memory than its caller's buffer, whatever
	// size the kept output claims. Prune deletes a pruned execution's
	// output with it.
	Output(id string) (io.ReadCloser, error)

	// HandoffDir returns the private folder (0700, the caller's own) on
	// this host where a dispatcher (ledger spawn) and the worker it
	// launched exchange the worker's acknowledgement file; ErrUnsafeStore
	// when it is not private (another user who could write there could
	// plant an acknowledgement). The file store's is DIR/handoff, created
	// if missing and shared by every spawn of the store, whose worker
	// opens the store by its Location. A store with no folder on this
	// host (a database) has none: "" and nil, and the dispatcher makes a
	// private temporary one for the one handoff.
	HandoffDir() (string, error)
	// BootNote returns the value noted under name (ValidNoteName; else
	// ErrBadInput) during this host's current boot; ok is false when
	// there is none, or only one of another boot. Notes are hints a
	// caller can always find out again (the scope probe's answer). A
	// store with no folder on this host (a database) keeps none: ok is
	// false.
	BootNote(name string) (value string, ok bool, err error)
	// SetBootNote notes value under name for this host's current boot,
	// durably (ErrNoBootID when the boot id is unknown). A store that
	// keeps no boot notes (a database) does nothing and returns nil.
	SetBootNote(name, value string) error

	// Verify cross-checks what the store holds (o.Job's alone, or every
	// job's) and calls fn with each problem found, in job order, one at a
	// time; fn's error ends the walk and is returned. It reads without
	// the lock: on a busy store a problem may be a write seen half done,
	// which a second run confirms. With o.Repair it holds the store's
	// lock (its owner's alone: anyone else is refused, ErrUnsafeStore),
	// rebuilds what the records say (indexes, summaries, links), marks
	// what they cannot (a slot whose execution is gone stays taken), and
	// each Problem passed says what was done. An error other than fn's
	// is a store that cannot be read. A store with nothing to cross-check
	// makes the checks it can and says which in the report.
	Verify(o VerifyOptions, fn func(Problem) error) (VerifyReport, error)

	// Location names the store in messages (a directory, a database).
	Location() string
	// Gone reports whether the store was removed since it was opened.
	Gone() bool
	// Close releases the store; it must not be used after.
	Close() error
}

// JSONEacher is a Ledger that can pass on what Each would as the objects
// MarshalJSON prints, without building each Record: an optional speed-up
// of `ledger list --json`, which it must not change by a byte. fn's bytes
// are valid only during the call; otherwise as Each.
type JSONEacher interface {
	EachJSON(f Filter, fn func(b []byte) error) error
}

// EndedCounter is a Ledger that can count a job's terminal executions
// without reading its summary: an optional speed-up of a runner's
// retention (`ledger run --keep`), which only picks from the count which
// of its finishes prunes. The count may be off by a few after a crash;
// ok is false when the store cannot tell at a glance, and the caller
// reads Summaries instead.
type EndedCounter interface {
	Ended(job string) (n uint64, ok bool)
}

// Summary is one job's state as `ledger status`, `check` and `metrics`
// read it. A store keeps it per job, so that reading it costs a bounded
// number of reads however many executions are stored.
type Summary struct {
	Job string
	// Latest is the job's newest execution, the last one claimed (ID "":
	// none is stored).
	Latest Record
	// LastFinished is the execution that became terminal last (ID "":
	// none), in the store's own order, not by FinishedAt, which a clock
	// stepped back puts out of order: the file store's log order, the
	// claim order of PostgreSQL's finished executions.
	LastFinished Record
	// LastSuccess is the Completed execution that finished last, in the
	// same order (ID "": never).
	LastSuccess Record
	// Live counts the executions claimed, claimed+fenced or running now.
	Live int
	// Runs counts the executions that reached each terminal status, as
	// they finish: prune does not decrease them. A store migrated from an
	// old format starts from what it holds.
	Runs map[Status]uint64
}

// FutureSkew is how far past now a recorded time may be and still be taken
// as now: a database's times are its server's (its transactions', which
// began before a wait), other hosts' clocks a little off. A time further
// ahead was recorded by a clock since stepped back: --every does not
// count such a finish, and check warns of it.
const FutureSkew = time.Minute

// EnvVar names the store in the environment (after --ledger).
const EnvVar = "TETHER_LEDGER"

// HandoffEnvVar names the store ledger spawn hands its adopt worker when
// the store is not a folder (a database URL, which may carry a password,
// goes in the environment, never on a command line). It is the worker's
// only: adopt reads it before $TETHER_LEDGER, and a payload's environment
// never carries it, so the payload's is exactly its caller's.
const HandoffEnvVar = "TETHER_HANDOFF_LEDGER"

// VerifyOptions selects what Verify checks and whether it repairs.
type VerifyOptions struct {
	// Job limits the check to one job ("": every job, and what belongs to
	// no job: links, outputs, stray files).
	Job string
	// Repair mends what the check finds, under the store's lock.
	Repair bool
}

// Problem is one thing Verify found wrong.
type Problem struct {
	// Job is the job it concerns, or "" for the store as a whole.
	Job string
	// What is wrong, in a few words: "_ids names 2 frames past the log's end".
	What string
	// Repair is what a repair does (or, once repaired, did), or, with
	// Cannot, why none can.
	Repair string
	// Cannot says no repair can mend it: it is left as it is.
	Cannot bool
}

// VerifyReport is what Verify checked.
type VerifyReport struct {
	Jobs, Executions int
	// Checks names what was checked, for the summary line
	// ("logs, indexes, summaries, links, slots, outputs, stray files").
	Checks string
	// Problems counts those passed to fn; Repaired, those mended.
	Problems, Repaired int
}
