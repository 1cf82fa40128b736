package syntax

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ErrBadSignal and ErrBadDuration are wrapped by the parse errors below.
var (
	ErrBadSignal   = errors.New("unknown signal")
	ErrBadDuration = errors.New("invalid duration")
)

// ParseSignal accepts a signal as a name with or without the SIG prefix, in
// any case (TERM, SIGTERM, term), or as a number (15). Signal 0 is refused:
// it sends nothing.
func ParseSignal(s string) (unix.Signal, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("%w: empty", ErrBadSignal)
	}
	if t[0] >= '0' && t[0] <= '9' {
		n, err := strconv.Atoi(t)
		if err != nil || n < 1 || n > 64 {
			return 0, fmt.Errorf("%w %q", ErrBadSignal, s)
		}
		return unix.Signal(n), nil
	}
	u := strings.ToUpper(t)
	if !strings.HasPrefix(u, "SIG") {
		u = "SIG" + u
	}
	if sig := unix.SignalNum(u); sig != 0 {
		return sig, nil
	}
	if sig, ok := aliases[u]; ok {
		return sig, nil
	}
	// Real-time signals: RTMIN, RTMIN+N, RTMAX, RTMAX-N. glibc reserves the
	// first two kernel RT signals, so SIGRTMIN is 34 as kill(1) reports it.
	const rtmin, rtmax = 34, 64
	switch {
	case u == "SIGRTMIN":
		return rtmin, nil
	case u == "SIGRTMAX":
		return rtmax, nil
	case strings.HasPrefix(u, "SIGRTMIN+"):
		if n, err := strconv.Atoi(u[len("SIGRTMIN+"):]); err == nil && n >= 0 && rtmin+n <= rtmax {
			return unix.Signal(rtmin + n), nil
		}
	case strings.HasPrefix(u, "SIGRTMAX-"):
		if n, err := strconv.Atoi(u[len("SIGRTMAX-"):]); err == nil && n >= 0 && rtmax-n >= rtmin {
			return unix.Signal(rtmax - n), nil
		}
	}
	return 0, fmt.Errorf("%w %q", ErrBadSignal, s)
}

// ParseStopSignal is ParseSignal for the first signal of a bounded stop
// (--signal, a --schedule step): it takes 0 too, which sends nothing, so
// that the stop only waits before its next step (KILL), as timeout -s0
// -k D does.
func ParseStopSignal(s string) (unix.Signal, error) {
	if strings.TrimSpace(s) == "0" {
		return 0, nil
	}
	return ParseSignal(s)
}

// aliases are the other names kill -L (util-linux) and kill -l (procps,
// bash) list for a signal, which unix.SignalNum, one name a number, does
// not know.
var aliases = map[string]unix.Signal{
	"SIGIOT":    unix.SIGABRT,
	"SIGCLD":    unix.SIGCHLD,
	"SIGPOLL":   unix.SIGIO,
	"SIGUNUSED": unix.SIGSYS,
}

// SignalName returns the short upper-case name of sig without the SIG
// prefix (TERM, KILL), or its number when it has no name.
func SignalName(sig unix.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return strings.TrimPrefix(n, "SIG")
	}
	return strconv.Itoa(int(sig))
}

// maxDuration bounds durations so arithmetic on deadlines cannot overflow.
const maxDuration = 100 * 365 * 24 * time.Hour

// Day is the unit "d" of a duration: 24 hours, as a clock counts them.
const Day = 24 * time.Hour

// ParseDuration accepts Go syntax (250ms, 5s, 2m, 1h30m), a bare, possibly
// fractional, number of seconds (5, 0.5) or of days (7d, 1.5d): one syntax
// for every duration a tool takes, as coreutils timeout reads 1d. Negative,
// NaN and absurdly large values are refused, and so is a value that is
// not zero but rounds to zero (1e-10000, 0.1ns): it would read as "none".
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("%w: empty", ErrBadDuration)
	}
	if n, ok := strings.CutSuffix(t, "d"); ok {
		return parseNumber(s, n, Day)
	}
	if _, err := strconv.ParseFloat(t, 64); err == nil {
		return parseNumber(s, t, time.Second)
	}
	d, err := time.ParseDuration(t)
	if err != nil || d < 0 || d > maxDuration {
		return 0, fmt.Errorf("%w %q", ErrBadDuration, s)
	}
	if d == 0 && nonZero(t) {
		return 0, fmt.Errorf("%w %q: shorter than a nanosecond, it would mean none", ErrBadDuration, s)
	}
	return d, nil
}

// parseNumber parses n, a decimal number of units, for ParseDuration (s is
// the value as given, for messages).
func parseNumber(s, n string, unit time.Duration) (time.Duration, error) {
	f, err := strconv.ParseFloat(n, 64)
	// Seconds may be written 1e-3; days are plain decimals (1.5d).
	odd := "xXpP_"
	if unit == Day {
		odd += "eE"
	}
	if err != nil || strings.ContainsAny(n, odd) || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%w %q", ErrBadDuration, s)
	}
	if f < 0 {
		return 0, fmt.Errorf("%w %q: must not be negative", ErrBadDuration, s)
	}
	if f > float64(maxDuration)/float64(unit) {
		return 0, fmt.Errorf("%w %q", ErrBadDuration, s)
	}
	d := time.Duration(f * float64(unit))
	mantissa, _, _ := strings.Cut(strings.ToLower(n), "e")
	if d == 0 && nonZero(mantissa) {
		return 0, fmt.Errorf("%w %q: shorter than a nanosecond, it would mean none", ErrBadDuration, s)
	}
	return d, nil
}

// nonZero reports whether the digits of s are not all zeros.
func nonZero(s string) bool {
	return strings.ContainsAny(s, "123456789")
}
