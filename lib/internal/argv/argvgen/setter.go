package argvgen

import (
	"encoding"
	"fmt"
	"net/url"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kong"

	"github.com/tether-sh/tether/lib/cli/kongcli"
)

var (
	textUnmarshaler = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()
	mapperValue     = reflect.TypeOf((*kong.MapperValue)(nil)).Elem()
	// kong's registered types: its own mappers read them.
	kongTypes = map[reflect.Type]bool{
		reflect.TypeOf(time.Time{}):      true,
		reflect.TypeOf(time.Duration(0)): true,
		reflect.TypeOf(&url.URL{}):       true,
		reflect.TypeOf(&os.File{}):       true,
	}
)

// value writes the argv.Value of v with setter set.
func (w *argvWriter) value(v *kong.Value, set string) string {
	e := w.expr(v.Target)
	var b strings.Builder
	fmt.Fprintf(&b, "argv.Value[%s]{\n", w.g)
	fmt.Fprintf(&b, "Set: %s,\n", set)
	fmt.Fprintf(&b, "Zero: func(g *%s) { %s = argvZero%s },\n", w.g, e, strings.TrimPrefix(e, "g"))
	if len(v.Tag.Envs) > 0 {
		fmt.Fprintf(&b, "Envs: %#v,\n", v.Tag.Envs)
	}
	if v.HasDefault {
		fmt.Fprintf(&b, "Default: %q, HasDefault: true,\n", v.Default)
	}
	if v.Required {
		b.WriteString("Required: true,\n")
	}
	if why := w.why(v); why != "" {
		fmt.Fprintf(&b, "Why: %s,\n", why)
	}
	fmt.Fprintf(&b, "Summary: %q,\n", v.Summary())
	if what, negative := w.expected(v); what != "" && v.Flag != nil {
		fmt.Fprintf(&b, "Expected: %q,\n", what)
		if negative {
			b.WriteString("Negative: true,\n")
		}
	}
	if v.Enum != "" {
		fmt.Fprintf(&b, "EnumValues: %#v,\n", v.EnumSlice())
		var cases []string
		for _, c := range v.EnumSlice() {
			cases = append(cases, strconv.Quote(c))
		}
		fmt.Fprintf(&b, "Enum: func(g *%s) bool {\nswitch %s {\ncase %s:\nreturn true\n}\nreturn false\n},\n",
			w.g, e, strings.Join(cases, ", "))
	}
	b.WriteString("}")
	return b.String()
}

// setter writes the Set function of v, as kong's mapper for its type reads
// one string, or reports false for a type it does not know. isSwitch: a
// bool flag.
func (w *argvWriter) setter(v *kong.Value, isFlag bool) (set string, isSwitch, ok bool) {
	e := w.expr(v.Target)
	if e == "" {
		return "", false, false
	}
	t := v.Target.Type()
	g := w.g
	fn := func(body string) string { return fmt.Sprintf("func(g *%s, v string) bool {\n%s\n}", g, body) }
	typ := v.Tag.Type
	if typ != "" && typ != "path" || v.Enum != "" && t.Kind() != reflect.String {
		return "", false, false
	}
	if typ == "path" && v.HasDefault {
		return "", false, false // kong reads "" specially then
	}
	// kong's Registry.ForType, in its order.
	switch {
	case reflect.PointerTo(t).Implements(mapperValue) || t.Implements(mapperValue):
		return "", false, false // a Decode of its own, which may read anyhow
	case kongTypes[t]:
		return "", false, false
	case kongcli.DecodesText(t):
		// Registered by kongcli.Tool.Model: read as UnmarshalText reads.
		if typ != "" {
			return "", false, false
		}
		return fn(fmt.Sprintf("return %s.UnmarshalText([]byte(v)) == nil", e)), false, true
	case reflect.PointerTo(t).Implements(textUnmarshaler):
		if typ != "" || t.Kind() == reflect.Pointer {
			return "", false, false
		}
		// kong's adapter pops the value through JSON: mended.
		return fn(fmt.Sprintf("return %s.UnmarshalText([]byte(argv.Mend(v))) == nil", e)), false, true
	}
	conv, ok := w.basic(t, typ)
	if ok {
		return fn(conv(e)), t.Kind() == reflect.Bool, true
	}
	switch t.Kind() {
	case reflect.Pointer:
		if t.Elem().Kind() == reflect.Bool || t.Elem().Kind() == reflect.Pointer {
			return "", false, false
		}
		conv, ok := w.basic(t.Elem(), typ)
		if !ok {
			return "", false, false
		}
		return fn(fmt.Sprintf("var x %s\nok := func() bool {\n%s\n}()\n%s = &x\nreturn ok", w.typeName(t.Elem()), conv("x"), e)), false, true
	case reflect.Slice:
		if t.Name() != "" || t.Elem().Kind() != reflect.String || t.Elem().Name() != "string" {
			return "", false, false
		}
		// A flag's value is split at its separator (kong's
		// sliceDecoder), a positional's is one item.
		items := "[]string{v}"
		var body strings.Builder
		if isFlag {
			// No item at all: kong's list is empty, not nil, which
			// the tables do not say.
			fmt.Fprintf(&body, "items := argv.Split(v, %d)\nif len(items) == 0 {\nreturn false\n}\n", v.Tag.Sep)
			items = "items"
		}
		item := "argv.Mend(s)"
		fmt.Fprintf(&body, "for _, s := range %s {\n", items)
		if typ == "path" {
			fmt.Fprintf(&body, "p, ok := argv.Path(s)\nif !ok {\nreturn false\n}\n")
			item = "p"
		}
		fmt.Fprintf(&body, "%s = append(%s, %s)\n}\nreturn true", e, e, item)
		return fn(body.String()), false, true
	}
	return "", false, false
}

// why writes the Why function of v, which setter can set: kong's error
// for a value it refuses, from the type's UnmarshalText or as kong's
// mapper words it; "" when the tables cannot say.
func (w *argvWriter) why(v *kong.Value) string {
	e := w.expr(v.Target)
	t := v.Target.Type()
	if e == "" || v.Tag.Type != "" || v.Enum != "" && t.Kind() != reflect.String {
		return ""
	}
	fn := func(body string) string { return fmt.Sprintf("func(g *%s, v string) error {\nreturn %s\n}", w.g, body) }
	switch {
	case reflect.PointerTo(t).Implements(mapperValue) || t.Implements(mapperValue) || kongTypes[t]:
		return ""
	case kongcli.DecodesText(t):
		return fn(fmt.Sprintf("%s.UnmarshalText([]byte(v))", e))
	case reflect.PointerTo(t).Implements(textUnmarshaler) && t.Kind() != reflect.Pointer:
		return fn(fmt.Sprintf("%s.UnmarshalText([]byte(argv.Mend(v)))", e))
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
		if reflect.PointerTo(t).Implements(textUnmarshaler) || t.Implements(mapperValue) || reflect.PointerTo(t).Implements(mapperValue) || kongTypes[t] {
			return ""
		}
	}
	switch t.Kind() {
	case reflect.Bool:
		return fn("argv.BoolError(v)")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return fn(fmt.Sprintf("argv.IntError(v, %d)", t.Bits()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fn(fmt.Sprintf("argv.UintError(v, %d)", t.Bits()))
	}
	return ""
}

// expected names v in kong's error for a flag followed by another flag,
// as kongcli words it ("a value", "an int value", "a duration value"),
// and reports whether kongcli takes a negative number as its value; ""
// when the tables cannot say (a slice, a type of kong's own).
func (w *argvWriter) expected(v *kong.Value) (what string, negative bool) {
	t := v.Target.Type()
	if v.Tag.Type == "path" && t.Kind() == reflect.String {
		return "a file value", false // kong's path mapper pops a "file"
	}
	if v.Tag.Type != "" || t.Kind() == reflect.Slice || kongTypes[t] {
		return "", false
	}
	if kind := kongcli.TextKind(t); kind != "" {
		return article(kind) + " value", true
	}
	if reflect.PointerTo(t).Implements(mapperValue) || t.Implements(mapperValue) {
		return "", false
	}
	if reflect.PointerTo(t).Implements(textUnmarshaler) {
		return "a value", false
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a value", false
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an int value", false
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a uint value", false
	}
	return "", false
}

// article is kind with its indefinite article, as kongcli says it.
func article(kind string) string {
	if strings.ContainsRune("aeiou", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}

// basic returns the code that sets the expression it is given, of type t
// (a string, bool or integer kind), from v.
func (w *argvWriter) basic(t reflect.Type, typ string) (func(string) string, bool) {
	if t.Implements(mapperValue) || reflect.PointerTo(t).Implements(mapperValue) ||
		reflect.PointerTo(t).Implements(textUnmarshaler) || kongTypes[t] {
		return nil, false
	}
	name := w.typeName(t)
	conv := func(x string) string { return name + "(" + x + ")" }
	if name == t.Kind().String() {
		conv = func(x string) string { return x } // no conversion needed
	}
	switch t.Kind() {
	case reflect.String:
		if typ == "path" {
			return func(e string) string {
				return fmt.Sprintf("p, ok := argv.Path(v)\n%s = %s\nreturn ok", e, conv("p"))
			}, true
		}
		// kong's string mapper pops the value through JSON, which
		// mends bytes that are not UTF-8.
		return func(e string) string { return fmt.Sprintf("%s = %s\nreturn true", e, conv("argv.Mend(v)")) }, true
	case reflect.Bool:
		if typ != "" {
			return nil, false
		}
		return func(e string) string {
			return fmt.Sprintf("b, ok := argv.Bool(v)\n%s = %s\nreturn ok", e, conv("b"))
		}, true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if typ != "" {
			return nil, false
		}
		return func(e string) string {
			return fmt.Sprintf("n, ok := argv.Int(v, %d)\n%s = %s\nreturn ok", t.Bits(), e, name+"(n)")
		}, true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if typ != "" {
			return nil, false
		}
		return func(e string) string {
			return fmt.Sprintf("n, ok := argv.Uint(v, %d)\n%s = %s\nreturn ok", t.Bits(), e, name+"(n)")
		}, true
	}
	return nil, false
}
