package spec

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

// ParseDuration accepts Go syntax (250ms, 5s, 2m) or a bare, possibly
// fractional, number of seconds (5, 0.5). Negative, NaN and absurdly large
// values are refused.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("%w: empty", ErrBadDuration)
	}
	var d time.Duration
	if f, err := strconv.ParseFloat(t, 64); err == nil {
		if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > maxDuration.Seconds() {
			return 0, fmt.Errorf("%w %q", ErrBadDuration, s)
		}
		d = time.Duration(f * float64(time.Second))
	} else {
		d, err = time.ParseDuration(t)
		if err != nil || d < 0 || d > maxDuration {
			return 0, fmt.Errorf("%w %q", ErrBadDuration, s)
		}
	}
	return d, nil
}
