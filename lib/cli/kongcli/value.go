package kongcli

import (
	"encoding"
	"reflect"

	"github.com/alecthomas/kong"

	"github.com/tether-sh/tether/lib/cli"
)

// textTypes are lib/cli's flag types that kong reads with textMapper: the
// value popped as popValue pops it, then the type's UnmarshalText. The
// generated parser (lib/internal/argv) sets them with UnmarshalText
// alone (DecodesText).
// The values name the kind of value in kong's errors ("expected a
// duration value").
var textTypes = map[reflect.Type]string{
	reflect.TypeFor[cli.Duration]():         "duration",
	reflect.TypeFor[cli.OptionalDuration](): "duration",
	reflect.TypeFor[cli.Retention]():        "duration",
	reflect.TypeFor[cli.Count]():            "count",
}

// DecodesText reports whether kong reads a flag of type t as its
// UnmarshalText reads a value popped as popValue pops it, so that a
// parser generated from kong's model may set it with UnmarshalText.
func DecodesText(t reflect.Type) bool {
	_, ok := textTypes[t]
	return ok
}

// TextKind is the kind of value kong's errors name for a flag of type t
// that DecodesText ("duration"), or "".
func TextKind(t reflect.Type) string { return textTypes[t] }

// textMapper is kong's mapper for textTypes: what is the kind of value.
type textMapper struct{ what string }

// Decode implements kong.Mapper.
func (m textMapper) Decode(ctx *kong.DecodeContext, target reflect.Value) error {
	s, err := popValue(ctx, m.what)
	if err != nil {
		return err
	}
	return target.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s))
}

// popValue pops a flag's value. A value that reads as a negative number
// ("-5s", "-1") is taken as the value, so that the flag's own check says
// what is wrong with it, where kong would refuse it as a short flag:
// `expected value value but got "-5s" (short flag)`.
func popValue(ctx *kong.DecodeContext, what string) (string, error) {
	if t := ctx.Scan.Peek(); t.Type == kong.UntypedToken {
		if s, ok := t.Value.(string); ok && cli.Negative(s) {
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
