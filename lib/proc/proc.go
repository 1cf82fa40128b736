// Package proc identifies, watches and signals processes without ever
// hitting a recycled PID.
//
// A process is named by an ID: a PID plus its start time (field 22 of
// /proc/PID/stat, clock ticks since boot), written PID@START. A process whose
// start time differs from the one asked for is a different process: it counts
// as gone and is never signalled.
//
// "Gone" means the whole thread group has exited. An unreaped zombie whose
// threads have all exited is gone; a zombie thread-group leader whose other
// threads still run is not.
//
// On Linux, Open returns a Handle backed by a pidfd: waiting is event-driven
// (the runtime poller wakes on the pidfd) and signals go through
// pidfd_send_signal, so they reach the process the handle was opened for or
// nobody. Where the kernel has no pidfd, a Handle falls back to polling /proc
// and to kill(2) after re-checking the identity.
//
// proc is the only package of tether that reads /proc. Its files:
//
//	stat.go      the one /proc/PID/stat parser, and the State constants
//	identity     ReadStat, Lookup, Alive: what process holds a PID now
//	handle       Handle: one process watched and signalled through a pidfd
//	member       Member: a lightweight identity-checked pidfd for sets of processes
//	group        process groups: members, signals, outliving the leader
//	scan         Scanner and Snapshot: every process, children by PPID
//	ancestry     whether a process descends from another
//	procns       whether /proc is this PID namespace's
package proc

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
)

// Sentinel errors; callers test them with errors.Is.
var (
	ErrGone       = errors.New("process is gone")
	ErrBadID      = errors.New("invalid process id")
	ErrUnsafe     = errors.New("refusing to signal")
	ErrPermission = errors.New("permission denied")
	// ErrCannotJudge: /proc could not say whether a process runs (its stat
	// was unreadable for a reason other than its exit, e.g. EMFILE). Such a
	// process is never taken for gone.
	ErrCannotJudge = errors.New("cannot judge whether it runs")
)

// UnreadableError names the processes a scan listed but could not read,
// for a reason other than their exit: it cannot judge them. It wraps
// ErrCannotJudge and the first reason.
type UnreadableError struct {
	PIDs []int
	Err  error // why the first could not be read
}

func (e *UnreadableError) Error() string {
	return fmt.Sprintf("%d unreadable processes: %v: %v", len(e.PIDs), ErrCannotJudge, e.Err)
}

func (e *UnreadableError) Unwrap() []error { return []error{ErrCannotJudge, e.Err} }

// MaxPID is the highest PID the kernel can hand out: PIDs are below its
// hard pid_max limit of 2^22.
const MaxPID = 1<<22 - 1

// ID identifies one process: its PID and, when known, its start time.
// Start == 0 means "whichever process has this PID now".
type ID struct {
	PID   int
	Start uint64
}

// String formats the ID as PID@START, or PID when the start is unknown.
func (id ID) String() string {
	if id.Start == 0 {
		return strconv.Itoa(id.PID)
	}
	return strconv.Itoa(id.PID) + "@" + strconv.FormatUint(id.Start, 10)
}

// ParseID parses "PID" or "PID@START". It rejects anything that is not a
// plain decimal PID in 1..MaxPID and, if present, a decimal START.
func ParseID(s string) (ID, error) {
	pidPart, startPart, hasStart := strings.Cut(s, "@")
	pid, err := parseDecimal(pidPart, MaxPID)
	if err != nil || pid < 1 {
		return ID{}, fmt.Errorf("%w %q: want PID or PID@START", ErrBadID, s)
	}
	id := ID{PID: int(pid)}
	if hasStart {
		st, err := parseDecimal(startPart, 1<<62)
		if err != nil || st == 0 {
			return ID{}, fmt.Errorf("%w %q: START must be a positive number", ErrBadID, s)
		}
		id.Start = st
	}
	return id, nil
}

// parseDecimal accepts only ASCII digits (no sign, no spaces) up to max.
func parseDecimal(s string, max uint64) (uint64, error) {
	if s == "" || len(s) > 20 {
		return 0, strconv.ErrSyntax
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, strconv.ErrSyntax
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n > max {
		return 0, strconv.ErrRange
	}
	return n, nil
}

// UnwrapPath drops the "op PATH:" prefix of a *fs.PathError for a message
// that already names the path.
func UnwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
