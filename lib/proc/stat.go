package proc

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// Stat holds the fields of /proc/PID/stat that tether uses.
type Stat struct {
	PID     int
	Comm    string // command name, may contain spaces and parentheses
	State   byte   // R, S, D, Z, T, t, X, I ...
	PPID    int
	PGID    int
	SID     int
	Threads int    // field 20, num_threads
	Start   uint64 // field 22, starttime in clock ticks since boot
}

var errStatFormat = errors.New("malformed /proc stat line")

// ParseStat parses one /proc/PID/stat line. The command name is everything
// between the first "(" and the last ")", so names containing spaces or
// parentheses cannot shift the fields after it.
func ParseStat(b []byte) (Stat, error) {
	open := bytes.IndexByte(b, '(')
	closeIdx := bytes.LastIndexByte(b, ')')
	if open < 1 || closeIdx < open {
		return Stat{}, errStatFormat
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil {
		return Stat{}, fmt.Errorf("%w: pid: %v", errStatFormat, err)
	}
	st := Stat{PID: pid, Comm: string(b[open+1 : closeIdx])}
	// Fields after the name, numbered from 3 (state).
	rest := bytes.Fields(b[closeIdx+1:])
	if len(rest) < 20 { // up to field 22
		return Stat{}, fmt.Errorf("%w: %d fields after the name", errStatFormat, len(rest))
	}
	if len(rest[0]) != 1 {
		return Stat{}, fmt.Errorf("%w: state %q", errStatFormat, rest[0])
	}
	st.State = rest[0][0]
	field := func(n int) []byte { return rest[n-3] }
	ints := []struct {
		n   int
		dst *int
	}{{4, &st.PPID}, {5, &st.PGID}, {6, &st.SID}, {20, &st.Threads}}
	for _, f := range ints {
		v, err := strconv.Atoi(string(field(f.n)))
		if err != nil {
			return Stat{}, fmt.Errorf("%w: field %d: %v", errStatFormat, f.n, err)
		}
		*f.dst = v
	}
	st.Start, err = strconv.ParseUint(string(field(22)), 10, 64)
	if err != nil {
		return Stat{}, fmt.Errorf("%w: field 22: %v", errStatFormat, err)
	}
	return st, nil
}

// exited reports whether a process in this state has no thread left running:
// a zombie (or dead) task whose thread count is down to the leader itself.
// A zombie leader whose other threads still run keeps Threads > 1.
func (s Stat) exited() bool {
	return (s.State == 'Z' || s.State == 'X') && s.Threads <= 1
}
