package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tether-sh/tether/lib/syntax"
)

// Negative reports whether s reads as a negative number: "-" then a digit
// or a point. Kong's model takes such a word as a flag's value, not as a
// short flag (lib/cli/kongcli), so that the flag's own check says what is
// wrong with it.
func Negative(s string) bool {
	s = strings.TrimSpace(s)
	return len(s) > 1 && s[0] == '-' && (s[1] == '.' || s[1] >= '0' && s[1] <= '9')
}

// parseDuration is syntax.ParseDuration saying why a negative value is wrong.
func parseDuration(s string, parse func(string) (time.Duration, error)) (time.Duration, error) {
	if Negative(s) {
		return 0, fmt.Errorf("%w %q: must not be negative", syntax.ErrBadDuration, s)
	}
	return parse(s)
}

// Retention is a kong flag type for how long records are kept: a duration,
// or days ("7d"), with syntax.ParseRetention.
type Retention time.Duration

// UnmarshalText implements encoding.TextUnmarshaler for kong.
func (r *Retention) UnmarshalText(b []byte) error {
	v, err := parseDuration(string(b), syntax.ParseRetention)
	if err != nil {
		return err
	}
	*r = Retention(v)
	return nil
}

// D returns the value as a time.Duration.
func (r Retention) D() time.Duration { return time.Duration(r) }

// Count is a kong flag type for a number of things: a non-negative int.
type Count int

// UnmarshalText implements encoding.TextUnmarshaler.
func (c *Count) UnmarshalText(b []byte) error {
	s := string(b)
	n, err := strconv.Atoi(strings.TrimSpace(s))
	switch {
	case err != nil:
		return fmt.Errorf("invalid count %q", s)
	case n < 0:
		return fmt.Errorf("invalid count %q: must not be negative", s)
	}
	*c = Count(n)
	return nil
}
