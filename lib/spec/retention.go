package spec

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Day is the unit of a retention: 24 hours, as a clock counts them.
const Day = 24 * time.Hour

// ParseRetention parses how long records are kept: a duration as
// ParseDuration takes it, or a number of days ("7d", "1.5d"), the unit
// retentions are thought in. Days are accepted only here: a grace or a
// deadline of days is most likely a typo.
func ParseRetention(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	n, ok := strings.CutSuffix(t, "d")
	if !ok {
		return ParseDuration(s)
	}
	f, err := strconv.ParseFloat(n, 64)
	if err != nil || strings.ContainsAny(n, "eExXpP_") || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%w %q", ErrBadDuration, s)
	}
	if f < 0 {
		return 0, fmt.Errorf("%w %q: must not be negative", ErrBadDuration, s)
	}
	if f > maxDuration.Hours()/24 {
		return 0, fmt.Errorf("%w %q", ErrBadDuration, s)
	}
	return time.Duration(f * float64(Day)), nil
}
