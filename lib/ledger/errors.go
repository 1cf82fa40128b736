package ledger

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error the package returns wraps one of these, or is
// a system error (I/O, permission) that wraps none.
var (
	// ErrRefused: the transition is not allowed from the current state.
	ErrRefused = errors.New("refused")
	// ErrNotFound: no execution has that id (or the job has none).
	ErrNotFound = errors.New("no such execution")
	// ErrBadID: the id is malformed (not 1-64 of [0-9a-z-]).
	ErrBadID = errors.New("malformed id")
	// ErrBadInput: a malformed job name, instant, status, field or option.
	ErrBadInput = errors.New("bad input")
	// ErrCorrupt: the store is damaged: a record, log, index, link or slot
	// cannot be parsed, is not a legal state, or disagrees with the others.
	ErrCorrupt = errors.New("corrupt store")
	// ErrUnsafeStore: the store is writable by others, owned by someone
	// else, not a ledger store, or on a file system where flock is unreliable.
	ErrUnsafeStore = errors.New("unsafe store")
	// ErrUnavailable: a database store could not be reached, or a
	// statement did not complete in time (a system error, 3).
	ErrUnavailable = errors.New("ledger database unavailable")
)

// kindError carries a sentinel for errors.Is without repeating its text:
// a refusal reads "execution is claimed, not fenced", not "refused: ...".
type kindError struct {
	kind error
	msg  string
}

func (e *kindError) Error() string { return e.msg }

func (e *kindError) Unwrap() error { return e.kind }

// refusedf returns an ErrRefused whose message names the current state.
func refusedf(format string, args ...any) error {
	return &kindError{kind: ErrRefused, msg: fmt.Sprintf(format, args...)}
}

// badInputf returns an ErrBadInput.
func badInputf(format string, args ...any) error {
	return &kindError{kind: ErrBadInput, msg: fmt.Sprintf(format, args...)}
}

// ErrOutputLost: an execution's kept output was lost in a crash (its
// file, renamed into place without a flush, came back empty or cut
// short: the contract is surviving the writer's death, not a power cut).
// Such an error wraps ErrNotFound too: nothing is kept, nothing is
// damaged.
var ErrOutputLost = errors.New("output lost in a crash")

type outputLostError struct{ msg string }

func (e *outputLostError) Error() string { return e.msg }

func (e *outputLostError) Unwrap() []error { return []error{ErrOutputLost, ErrNotFound} }

// OutputLostf returns an error wrapping ErrOutputLost and ErrNotFound.
func OutputLostf(format string, args ...any) error {
	return &outputLostError{msg: fmt.Sprintf(format, args...)}
}

// ErrNotDue: a claim with ClaimOptions.Every was refused because the
// job completed within the period, or is live. Such an error wraps
// ErrRefused too.
var ErrNotDue = errors.New("not due")

// notDueError is a refusal for ClaimOptions.Every: errors.Is holds for
// both ErrNotDue and ErrRefused.
type notDueError struct{ msg string }

func (e *notDueError) Error() string { return e.msg }

func (e *notDueError) Unwrap() []error { return []error{ErrNotDue, ErrRefused} }

// notDuef returns an error wrapping ErrNotDue and ErrRefused.
func notDuef(format string, args ...any) error {
	return &notDueError{msg: fmt.Sprintf(format, args...)}
}

// NotDuef is notDuef for the stores: their Every refusals read, and
// match, alike.
func NotDuef(format string, args ...any) error { return notDuef(format, args...) }

// BadInputf returns an ErrBadInput whose message is the format's alone.
func BadInputf(format string, args ...any) error { return badInputf(format, args...) }

// Kindf returns an error wrapping kind (one of the sentinels) whose
// message is the format's alone, as every store's errors read: "job j has
// no execution", not "no such execution: job j has no execution".
func Kindf(kind error, format string, args ...any) error {
	return &kindError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// ErrLockTimeout: the store's lock was not free within the lock timeout;
// nothing was changed.
var ErrLockTimeout = errors.New("timed out waiting for the store's lock")

// ErrClaimStopped: the claim's Stop was closed before the claim began to
// commit; nothing was changed.
var ErrClaimStopped = errors.New("the claim was stopped before it was made; nothing was changed")

// errorsIsAny reports whether err wraps any of targets.
func errorsIsAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

// ErrOneHost: an operation on other hosts' executions (RecoverHost) asked
// of a store that holds only this host's (the file store). It wraps
// ErrBadInput: the caller named the wrong store for it (a usage error).
var ErrOneHost = &kindError{kind: ErrBadInput, msg: "the store holds only this host's executions"}

// ErrNoStore: a command that only reads named a store that does not
// exist (filestore.OpenExisting, a database without the schema); it is
// never created for a read.
var ErrNoStore = errors.New("no store")

// ErrNoBootID means this boot's id cannot be read (no
// /proc/sys/kernel/random/boot_id), so no boot note can be kept.
var ErrNoBootID = errors.New("the boot id is unknown")
