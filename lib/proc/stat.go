package proc

import (
	"bytes"
	"errors"
	"fmt"
)

// State is the one-letter process state of /proc/PID/stat (field 3), as
// in runc's libcontainer/system.
type State byte

// The states the kernel reports (fs/proc/array.c, task_state_array).
const (
	Running     State = 'R'
	Sleeping    State = 'S' // interruptible sleep
	DiskSleep   State = 'D' // uninterruptible sleep
	Stopped     State = 'T' // stopped by a signal
	TracingStop State = 't' // stopped by a tracer
	Zombie      State = 'Z'
	Dead        State = 'X'
	Idle        State = 'I' // an idle kernel thread
	Parked      State = 'P'
)

// Stat holds the fields of /proc/PID/stat that tether uses.
type Stat struct {
	PID     int
	Comm    string // command name, may contain spaces and parentheses
	State   State
	PPID    int
	PGID    int
	SID     int
	Threads int    // field 20, num_threads
	Start   uint64 // field 22, starttime in clock ticks since boot
}

// Exited reports whether a process in this state has no thread left
// running: CONTRACT.md's "gone" as seen in one /proc snapshot. A zombie (or
// dead) task is exited once its thread count is down to the leader
// itself; a zombie leader whose other threads still run keeps Threads > 1
// and is not gone.
func (s Stat) Exited() bool {
	return (s.State == Zombie || s.State == Dead) && s.Threads <= 1
}

// Stopped reports whether the process is stopped by a signal (T) or by a
// tracer (t): it cannot fork until it is continued.
func (s Stat) Stopped() bool { return s.State == Stopped || s.State == TracingStop }

var errStatFormat = errors.New("malformed /proc stat line")

// ParseStat parses one /proc/PID/stat line; it is the only parser of that
// format in tether. The command name is everything between the first "("
// and the last ")", so names containing spaces or parentheses cannot shift
// the fields after it. It does not allocate beyond the command name: the
// tree walk parses every process of the machine several times per step.
func ParseStat(b []byte) (Stat, error) {
	open := bytes.IndexByte(b, '(')
	closeIdx := bytes.LastIndexByte(b, ')')
	if open < 1 || closeIdx < open {
		return Stat{}, errStatFormat
	}
	pid, ok := atoi(bytes.TrimSpace(b[:open]))
	if !ok {
		return Stat{}, fmt.Errorf("%w: pid %q", errStatFormat, bytes.TrimSpace(b[:open]))
	}
	st := Stat{PID: pid, Comm: string(b[open+1 : closeIdx])}
	// Fields after the name, numbered from 3 (state) as in proc(5).
	field := 3
	for j := closeIdx + 1; j < len(b) && field <= 22; {
		for j < len(b) && (b[j] == ' ' || b[j] == '\n') {
			j++
		}
		k := j
		for k < len(b) && b[k] != ' ' && b[k] != '\n' {
			k++
		}
		if k == j {
			break
		}
		tok := b[j:k]
		j = k
		var dst *int
		switch field {
		case 3:
			if len(tok) != 1 {
				return Stat{}, fmt.Errorf("%w: state %q", errStatFormat, tok)
			}
			st.State = State(tok[0])
		case 4:
			dst = &st.PPID
		case 5:
			dst = &st.PGID
		case 6:
			dst = &st.SID
		case 20:
			dst = &st.Threads
		case 22:
			n, ok := atoi(tok)
			if !ok || n < 0 {
				return Stat{}, fmt.Errorf("%w: field 22: %q", errStatFormat, tok)
			}
			st.Start = uint64(n)
		}
		if dst != nil {
			n, ok := atoi(tok)
			if !ok {
				return Stat{}, fmt.Errorf("%w: field %d: %q", errStatFormat, field, tok)
			}
			*dst = n
		}
		field++
	}
	if field <= 22 {
		return Stat{}, fmt.Errorf("%w: %d fields after the name", errStatFormat, field-3)
	}
	return st, nil
}

// atoi parses a decimal int of at most 18 digits, allowing a leading "-"
// (a PGID or the TTY of a process without one can be negative in odd
// cases), without allocating.
func atoi(b []byte) (int, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}
