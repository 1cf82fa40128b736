package cli

import (
	"encoding"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kong"

	"github.com/tether-sh/tether/lib/spec"
)

// popValue pops a flag's value. A value that reads as a negative number
// ("-5s", "-1") is taken as the value, so that the flag's own check says
// what is wrong with it, where kong would refuse it as a short flag:
// `expected value value but got "-5s" (short flag)`.
func popValue(ctx *kong.DecodeContext, what string) (string, error) {
	if t := ctx.Scan.Peek(); t.Type == kong.UntypedToken {
		if s, ok := t.Value.(string); ok && negative(s) {
			ctx.Scan.Pop()
			return s, nil
		}
	}
	t, err := ctx.Scan.PopValue(what)
	if err != nil {
		return "", err
	}
	return t.String(), nil
}

// negative reports whether s reads as a negative number: "-" then a digit
// or a point.
func negative(s string) bool {
	s = strings.TrimSpace(s)
	return len(s) > 1 && s[0] == '-' && (s[1] == '.' || s[1] >= '0' && s[1] <= '9')
}

// parseDuration is spec.ParseDuration saying why a negative value is wrong.
func parseDuration(s string, parse func(string) (time.Duration, error)) (time.Duration, error) {
	if negative(s) {
		return 0, fmt.Errorf("%w %q: must not be negative", spec.ErrBadDuration, s)
	}
	return parse(s)
}

// Decode implements kong.MapperValue.
func (d *Duration) Decode(ctx *kong.DecodeContext) error {
	s, err := popValue(ctx, "duration")
	if err != nil {
		return err
	}
	return d.UnmarshalText([]byte(s))
}

// Decode implements kong.MapperValue.
func (d *OptionalDuration) Decode(ctx *kong.DecodeContext) error {
	s, err := popValue(ctx, "duration")
	if err != nil {
		return err
	}
	return d.UnmarshalText([]byte(s))
}

// Retention is a kong flag type for how long records are kept: a duration,
// or days ("7d"), with spec.ParseRetention.
type Retention time.Duration

// UnmarshalText implements encoding.TextUnmarshaler for kong.
func (r *Retention) UnmarshalText(b []byte) error {
	v, err := parseDuration(string(b), spec.ParseRetention)
	if err != nil {
		return err
	}
	*r = Retention(v)
	return nil
}

// Decode implements kong.MapperValue.
func (r *Retention) Decode(ctx *kong.DecodeContext) error {
	s, err := popValue(ctx, "duration")
	if err != nil {
		return err
	}
	return r.UnmarshalText([]byte(s))
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

// Decode implements kong.MapperValue.
func (c *Count) Decode(ctx *kong.DecodeContext) error {
	s, err := popValue(ctx, "count")
	if err != nil {
		return err
	}
	return c.UnmarshalText([]byte(s))
}

// TextDecoder is a flag type whose kong Decode is popValue then its
// UnmarshalText: the hot path's parser, generated from the kong model
// (lib/internal/argv), sets it with UnmarshalText alone. Only this
// package's types can be one (a Decode that reads otherwise must not
// claim it); a kong.MapperValue that is not one is left to kong.
type TextDecoder interface {
	encoding.TextUnmarshaler
	kong.MapperValue
	decodesText()
}

func (*Duration) decodesText()         {}
func (*OptionalDuration) decodesText() {}
func (*Retention) decodesText()        {}
func (*Count) decodesText()            {}
