package cli

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/syntax"
)

// Duration is a kong flag type using ParseDuration.
type Duration time.Duration

// UnmarshalText implements encoding.TextUnmarshaler for kong.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := parseDuration(string(b), syntax.ParseDuration)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// OptionalDuration is a Duration flag that remembers whether it was given,
// for a flag whose 0 means something else than its absence.
type OptionalDuration struct {
	Duration
	Given bool
}

// UnmarshalText implements encoding.TextUnmarshaler for kong.
func (d *OptionalDuration) UnmarshalText(b []byte) error {
	if err := d.Duration.UnmarshalText(b); err != nil {
		return err
	}
	d.Given = true
	return nil
}

// Signal is a kong flag type using ParseStopSignal: the first signal of
// a bounded stop, 0 (none: only the wait before KILL) included.
type Signal unix.Signal

// UnmarshalText implements encoding.TextUnmarshaler for kong.
func (s *Signal) UnmarshalText(b []byte) error {
	v, err := syntax.ParseStopSignal(string(b))
	if err != nil {
		return err
	}
	*s = Signal(v)
	return nil
}

// S returns the value as a unix.Signal.
func (s Signal) S() unix.Signal { return unix.Signal(s) }

// Location is a kong flag type for where a store is: a directory or a
// URL (postgres://...), which must be named when the flag is given:
// `--ledger ""` (an unset variable in a script) is bad input, not a quiet
// fall-back to the default. What it names is judged where it is opened
// (lib/ledger/location).
type Location string

// UnmarshalText implements encoding.TextUnmarshaler for kong.
func (l *Location) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		return errors.New("empty directory name")
	}
	*l = Location(b)
	return nil
}
