package ledger

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The scheduled instant of a claim: its parsing, its range, and which
// statuses hold it.

// Bounds of an instant: 1970-01-01 to 9999-12-31, so unix seconds are never
// negative and every instant has an RFC 3339 form.
var (
	minInstant = time.Unix(0, 0).UTC()
	maxInstant = time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
)

func checkInstantRange(t time.Time) error {
	if t.Before(minInstant) || t.After(maxInstant) {
		return fmt.Errorf("%s is outside 1970-01-01..9999-12-31", FormatTime(t))
	}
	return nil
}

// ParseInstant parses a scheduled instant given as RFC 3339
// (2024-05-01T10:00:00Z, 2024-05-01T12:00:00+02:00, fractions allowed) or as
// unix seconds (1714557600, 1714557600.25), and returns it in UTC, so every
// spelling of one instant is equal. Errors wrap ErrBadInput.
func ParseInstant(s string) (time.Time, error) {
	bad := func() (time.Time, error) {
		return time.Time{}, badInputf("invalid instant %q: want RFC 3339 (2024-05-01T10:00:00Z) or unix seconds", s)
	}
	t := strings.TrimSpace(s)
	if t == "" || len(t) > 64 {
		return bad()
	}
	var out time.Time
	if t[0] >= '0' && t[0] <= '9' && !strings.ContainsAny(t, "-:T") {
		secPart, fracPart, hasFrac := strings.Cut(t, ".")
		if !allDigits(secPart) || len(secPart) > 12 || (hasFrac && (fracPart == "" || len(fracPart) > 9 || !allDigits(fracPart))) {
			return bad()
		}
		sec, err := strconv.ParseInt(secPart, 10, 64)
		if err != nil {
			return bad()
		}
		var nsec int64
		if hasFrac {
			f := fracPart + strings.Repeat("0", 9-len(fracPart))
			nsec, _ = strconv.ParseInt(f, 10, 64)
		}
		out = time.Unix(sec, nsec).UTC()
	} else {
		p, err := time.Parse(time.RFC3339Nano, t)
		if err != nil {
			return bad()
		}
		out = p.UTC()
	}
	if err := checkInstantRange(out); err != nil {
		return time.Time{}, badInputf("invalid instant %q: %v", s, err)
	}
	return out, nil
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// blocksInstant reports whether an execution in status st keeps its
// instant from being claimed again (failed and abandoned may retry).
func blocksInstant(st Status) bool {
	return st == Claimed || st == Running || st == Completed || st == Unknown
}
