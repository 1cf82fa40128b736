package ledger

import (
	"reflect"
	"strings"

	"github.com/tether-sh/tether/lib/internal/shortcut"
)

// Building kong's model of every subcommand (reflection over each struct
// tag, help interpolation) costs a third of a millisecond: a third of a
// claim's cost. A ledger call runs one subcommand, so run hands kong a
// grammar narrowed to the global flags and that one subcommand. The
// narrowed grammar is made from the same fields and tags, so parsing,
// errors and per-command help are the same; anything unusual (no
// subcommand, an unknown one, --help before it) gets the full grammar.

// narrowGrammar returns a pointer to a new struct holding g's fields, but
// of g's embedded commands only the one args selects, and a function that
// copies the parsed values back into g. ok is false when args do not name
// exactly one known subcommand.
func narrowGrammar(g *grammar, args []string) (target any, copyBack func(), ok bool) {
	shortcut.Ran(shortcut.NarrowGrammar)
	name := commandName(args)
	if name == "" {
		return nil, nil, false
	}
	gv := reflect.ValueOf(g).Elem()
	var fields []reflect.StructField
	var paths [][]int
	found := false
	for i := 0; i < gv.NumField(); i++ {
		f := gv.Type().Field(i)
		if f.Anonymous && f.Type == reflect.TypeFor[commands]() {
			for j := 0; j < f.Type.NumField(); j++ {
				c := f.Type.Field(j)
				if _, isCmd := c.Tag.Lookup("cmd"); isCmd && kongName(c) == name {
					fields = append(fields, c)
					paths = append(paths, []int{i, j})
					found = true
				}
			}
			continue
		}
		fields = append(fields, f)
		paths = append(paths, []int{i})
	}
	if !found {
		return nil, nil, false
	}
	for i := range fields {
		fields[i].Index, fields[i].Offset = nil, 0
	}
	nv := reflect.New(reflect.StructOf(fields))
	return nv.Interface(), func() {
		for i, p := range paths {
			gv.FieldByIndex(p).Set(nv.Elem().Field(i))
		}
	}, true
}

// commandName returns the first argument that is neither a flag nor the
// value of --ledger, or "" if --help, -h or "--" comes first.
func commandName(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--ledger":
			i++
		case a == "--" || a == "-h" || a == "--help":
			return ""
		case strings.HasPrefix(a, "-"):
		default:
			return a
		}
	}
	return ""
}

// kongName is the command name kong derives from a field: its name tag, or
// the field name in kebab case.
func kongName(f reflect.StructField) string {
	if n := f.Tag.Get("name"); n != "" {
		return n
	}
	var b strings.Builder
	for i, r := range f.Name {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('-')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}
