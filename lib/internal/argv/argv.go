// Package argv parses a command line without kong, against tables that
// argvgen generates from the tool's kong model (the lib/cmd/TOOL/argv_gen.go
// files; go generate ./lib/cmd/tetherdoc rewrites them and
// TestArgvUpToDate fails when one is stale): the hot path's parser, so that no tool
// builds kong's model by reflection (≈2 ms, ≈300 page faults) to run a
// command line that parses.
//
// kong stays the grammar's one source and its only judge: Parse takes a
// command line only when it is sure kong would parse it, and to the very
// same values (every field of the grammar struct, defaults and
// $ENV-defaults of the commands not run included); for anything else —
// --help, -h, --version, an unknown or abbreviated flag, a missing value
// or argument, a value kong reads through a mapper the tables do not
// know, a value that starts with "-", a refused value — it reports false,
// and the caller hands the command line to kong, which parses it or words
// the error and picks the exit code. So the generated tables may leave
// anything out, never get anything wrong: a flag the generator cannot
// read is left out of them (and the whole tool to kong when it has a
// default or an environment variable, which kong applies unasked; a
// command with a hook or a validator goes to kong).
//
// The walk is kong's own (kong's Context.trace), restricted: flags of the
// command reached so far and of its ancestors, "--name=value" and
// "--name value", "-x", "-x value", "-xvalue" and clusters ("-nq": -n
// then -q, a byte each, as kong's scanner splits them), "--" ending the
// flags (kept as CMD's first word when the next argument is a
// passthrough one, as kong keeps it; a command may follow it),
// positionals in order, a []string positional taking the values that
// follow, a passthrough one everything. Values are read as kong's
// mappers read them: a string through JSON (bytes that are not UTF-8
// mended: Mend), a path through kong.ExpandPath (Path), a list split at
// its separator (Split).
// TestArgvMatchesKong and FuzzArgv (per tool, and on argvtest/toy's
// grammar, which uses what the tools do not yet) hold the two together.
package argv

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Value is one flag or positional argument of a grammar G: how to set it
// from one string, and what kong's Reset gives it when the command line
// does not.
type Value[G any] struct {
	// Set stores v as kong's mapper would, or reports false where kong
	// would read it otherwise or refuse it. A switch's Set gets "true".
	Set func(g *G, v string) bool
	// Zero sets the field's zero value.
	Zero func(g *G)
	// Envs are the variables kong reads, the first one set wins, when the
	// command line does not give the value; then Default if HasDefault.
	Envs       []string
	Default    string
	HasDefault bool
	// Enum, when set, reports whether the value (after defaults) is one
	// of the enum tag's: kong's Validate refuses it otherwise.
	Enum func(g *G) bool
	// Required: kong refuses the command line without it.
	Required bool
	// Why is kong's error for a value Set refuses, as kong words it after
	// the flag's name ("--keep: invalid count \"x\""), or nil when it cannot
	// tell that kong refuses it (kong may read it otherwise). Nil Why: not
	// known. It writes to g: give it a scratch grammar.
	Why func(g *G, v string) error
	// Summary names the value in kong's usage errors (kong's Summary):
	// "--status=STRING", "<id>", "<CMD> ...".
	Summary string
	// EnumValues are the enum tag's values, in its order, for kong's
	// "must be one of" error.
	EnumValues []string
	// Expected names the value in kong's error for a flag followed by
	// another flag, as kongcli words it ("a value", "a duration value"),
	// or is "" when the tables cannot say; Negative: kong takes a
	// negative number ("-5s") as the value (lib/cli/kongcli's popValue),
	// for its type to judge.
	Expected string
	Negative bool
}

// Flag is one flag.
type Flag[G any] struct {
	Value[G]
	Names []string // long names and aliases, without "--"
	Short byte     // 0: none
	// Switch: a bool flag, given without a value or as --name=value.
	Switch bool
}

// Positional is one positional argument.
type Positional[G any] struct {
	Value[G]
	// Slice: a []string that takes every value that follows (kong's
	// PopWhile IsValue); Passthrough: every argument that follows.
	Slice, Passthrough bool
}

// Node is the application or one command.
type Node[G, E any] struct {
	Name        string
	Aliases     []string
	Flags       []Flag[G]
	Positionals []Positional[G]
	Children    []*Node[G, E]
	// Fast is false when kong must parse every command line that reaches
	// this node (a hook, a validator, a value the tables cannot apply).
	Fast bool
	// Run calls the Run methods kong's Context.Run would: this node's,
	// then its ancestors'. Nil for a node that cannot be the last.
	Run func(g *G, e E) error
}

// Parse parses args into g, which must be the zero G, as kong would, and
// returns the command node selected (the root for a tool without
// commands); ok is false when kong must parse args, and g is then to be
// discarded.
func Parse[G, E any](root *Node[G, E], g *G, args []string) (selected *Node[G, E], ok bool) {
	p := parser[G, E]{g: g, given: map[*Value[G]]bool{}}
	if !p.trace(root, args) {
		return nil, false
	}
	if !p.reset(root) || !p.check() {
		return nil, false
	}
	return p.path[len(p.path)-1], true
}

type parser[G, E any] struct {
	g     *G
	path  []*Node[G, E]
	given map[*Value[G]]bool
}

// trace walks args as kong's Context.trace does, setting what they give.
func (p *parser[G, E]) trace(root *Node[G, E], args []string) bool {
	node := root
	p.path = append(p.path, node)
	if !node.Fast {
		return false
	}
	positional := 0
	ok := false
	ended := false // after "--" or at a passthrough positional: all positional
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !ended {
			switch {
			case a == "--":
				ended = true
				if positional < len(node.Positionals) && node.Positionals[positional].Passthrough {
					i-- // kong keeps "--" as the passthrough's first word
				}
				continue
			case strings.HasPrefix(a, "--"):
				if i, ok = p.longFlag(args, i); !ok {
					return false
				}
				continue
			case a != "-" && strings.HasPrefix(a, "-"):
				if i, ok = p.shortFlag(args, i); !ok {
					return false
				}
				continue
			}
		}
		// A positional argument: the node's next one, else a command.
		if positional < len(node.Positionals) {
			pos := &node.Positionals[positional]
			positional++
			switch {
			case pos.Passthrough:
				for _, v := range args[i:] {
					if !p.set(&pos.Value, v) {
						return false
					}
				}
				return true
			case pos.Slice:
				if !p.set(&pos.Value, a) {
					return false
				}
				for ended && i+1 < len(args) || i+1 < len(args) && isValue(args[i+1]) {
					i++
					if !p.set(&pos.Value, args[i]) {
						return false
					}
				}
			default:
				if !p.set(&pos.Value, a) {
					return false
				}
			}
			continue
		}
		child := (*Node[G, E])(nil)
		for _, c := range node.Children {
			if c.Name == a || has(c.Aliases, a) {
				child = c
				break
			}
		}
		// kong takes a command after "--" too: the words after it are
		// arguments (no flags) to the end.
		if child == nil {
			return false
		}
		node, positional = child, 0
		p.path = append(p.path, node)
		if !node.Fast {
			return false
		}
	}
	return true
}

// longFlag sets the --flag (or --flag=value) at args[i], and returns the
// index of its last word.
func (p *parser[G, E]) longFlag(args []string, i int) (int, bool) {
	name, value, hasValue := strings.Cut(args[i][2:], "=")
	f := p.flag(func(f *Flag[G]) bool { return has(f.Names, name) })
	if f == nil {
		return i, false
	}
	if f.Switch {
		if !hasValue {
			value = "true" // else kong's bool mapper reads the value
		}
	} else if !hasValue {
		var ok bool
		if value, ok = nextValue(args, i); !ok {
			return i, false
		}
		i++
	}
	return i, p.set(&f.Value, value)
}

// shortFlag sets the -f at args[i], and returns the index of its last
// word. As kong's scanner does, it reads "-abc" as -a then "bc", which is
// -a's value when -a takes one, else the short flags -b and -c, one byte
// each.
func (p *parser[G, E]) shortFlag(args []string, i int) (int, bool) {
	tail := args[i][1:]
	for tail != "" {
		c := tail[0]
		tail = tail[1:]
		f := p.flag(func(f *Flag[G]) bool { return f.Short != 0 && f.Short == c })
		if f == nil {
			return i, false
		}
		if f.Switch {
			if !p.set(&f.Value, "true") {
				return i, false
			}
			continue
		}
		value := tail
		if value == "" {
			var ok bool
			if value, ok = nextValue(args, i); !ok {
				return i, false
			}
			i++
		}
		return i, p.set(&f.Value, value)
	}
	return i, true
}

// flag finds the flag match selects among those of the nodes reached.
func (p *parser[G, E]) flag(match func(*Flag[G]) bool) *Flag[G] {
	for i := len(p.path) - 1; i >= 0; i-- {
		for j := range p.path[i].Flags {
			if f := &p.path[i].Flags[j]; match(f) {
				return f
			}
		}
	}
	return nil
}

func (p *parser[G, E]) set(v *Value[G], s string) bool {
	p.given[v] = true
	return v.Set(p.g, s)
}

// reset gives every value the command line did not give what kong's
// Reset gives it: its environment variable, else its default, else zero.
// A value kong would refuse is refused on the selected path and zeroed
// elsewhere, as kong does.
func (p *parser[G, E]) reset(n *Node[G, E]) bool {
	selected := false
	for _, s := range p.path {
		selected = selected || s == n
	}
	one := func(v *Value[G]) bool {
		if p.given[v] {
			// kong resets a value before it applies the command line's:
			// an environment variable it cannot read is an error even
			// then.
			return len(v.Envs) == 0 || envReadable(v)
		}
		if resetValue(p.g, v) || !selected {
			return true
		}
		return false
	}
	for i := range n.Flags {
		if !one(&n.Flags[i].Value) {
			return false
		}
	}
	for i := range n.Positionals {
		if !one(&n.Positionals[i].Value) {
			return false
		}
	}
	for _, c := range n.Children {
		if !p.reset(c) {
			return false
		}
	}
	return true
}

// envReadable reports whether v's environment variable, if one is set,
// reads.
func envReadable[G any](v *Value[G]) bool {
	var scratch G
	return resetValue(&scratch, v)
}

func resetValue[G any](g *G, v *Value[G]) bool {
	v.Zero(g)
	for _, env := range v.Envs {
		if s, ok := os.LookupEnv(env); ok {
			if v.Set(g, s) {
				return true
			}
			v.Zero(g)
			return false
		}
	}
	if v.HasDefault && !v.Set(g, v.Default) {
		v.Zero(g)
		return false
	}
	return true
}

// check is kong's checks after the trace: a command chosen where one is
// needed, every required flag and argument given, enums in their set.
func (p *parser[G, E]) check() bool {
	last := p.path[len(p.path)-1]
	if len(last.Children) > 0 || last.Run == nil && len(p.path) > 1 {
		return false
	}
	for _, n := range p.path {
		for i := range n.Flags {
			if !p.checkValue(&n.Flags[i].Value) {
				return false
			}
		}
		for i := range n.Positionals {
			if !p.checkValue(&n.Positionals[i].Value) {
				return false
			}
		}
	}
	return true
}

func (p *parser[G, E]) checkValue(v *Value[G]) bool {
	if v.Required && !p.given[v] {
		return false
	}
	return v.Enum == nil || v.Enum(p.g)
}

// nextValue is the value of the flag at args[i] given as the next
// argument: one kong's scanner takes as a value (not a flag).
func nextValue(args []string, i int) (string, bool) {
	if i+1 >= len(args) || !isValue(args[i+1]) {
		return "", false
	}
	return args[i+1], true
}

// isValue reports whether kong's scanner takes a before "--" as a value:
// not a flag. (kong takes "-5"-like values of lib/cli's types too, only
// to refuse them: kong words that.)
func isValue(a string) bool { return a == "-" || !strings.HasPrefix(a, "-") }

func has(names []string, s string) bool {
	for _, n := range names {
		if n == s {
			return true
		}
	}
	return false
}

// Int reads s as kong's int mapper does (strconv.ParseInt, base 0:
// 0x10, 0o7, 010 and 1_000 too).
func Int(s string, bits int) (int64, bool) {
	n, err := strconv.ParseInt(s, 0, bits)
	return n, err == nil
}

// Uint is Int for kong's uint mapper.
func Uint(s string, bits int) (uint64, bool) {
	n, err := strconv.ParseUint(s, 0, bits)
	return n, err == nil
}

// Bool reads s as kong's bool mapper does: true, 1, yes, false, 0 or no,
// in any case.
func Bool(s string) (b, ok bool) {
	switch strings.ToLower(s) {
	case "true", "1", "yes":
		return true, true
	case "false", "0", "no":
		return false, true
	}
	return false, false
}

// IntError is kong's int mapper's error for s, or nil when kong reads it.
func IntError(s string, bits int) error {
	if _, err := strconv.ParseInt(s, 0, bits); err != nil {
		return fmt.Errorf("expected a valid %d bit int but got %q", bits, s)
	}
	return nil
}

// UintError is IntError for kong's uint mapper.
func UintError(s string, bits int) error {
	if _, err := strconv.ParseUint(s, 0, bits); err != nil {
		return fmt.Errorf("expected a valid %d bit uint but got %q", bits, s)
	}
	return nil
}

// BoolError is kong's bool mapper's error for s, given as --flag=s, or
// nil when kong reads it.
func BoolError(s string) error {
	switch s = strings.ToLower(s); s {
	case "true", "1", "yes", "false", "0", "no":
		return nil
	}
	return fmt.Errorf("bool value must be true, 1, yes, false, 0 or no but got %q", s)
}

// Mend is s as kong's string mapper reads it, through JSON: each byte
// that is not UTF-8 becomes U+FFFD.
func Mend(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return string([]rune(s))
}

// Path reads s as kong's "path" mapper does (a string, mended; "-" as it
// is, others through kong.ExpandPath): absolute paths as they are,
// "~/..." in the home directory of the user this process runs as (from
// the user database, as os/user finds it), others made absolute against
// the working directory (as given when that is gone).
func Path(s string) (string, bool) {
	s = Mend(s)
	switch {
	case s == "-" || filepath.IsAbs(s):
		return s, true
	case strings.HasPrefix(s, "~/"):
		home, ok := passwdHome(os.Getuid())
		if !ok {
			return s, true
		}
		return filepath.Join(home, s[2:]), true
	}
	abs, err := filepath.Abs(s)
	if err != nil {
		return s, true
	}
	return abs, true
}

// Split is s, the value of a []string flag, as kong reads it
// (kong.SplitEscaped): the items between the separators sep (-1: one
// item), a backslash escaping sep (and kept before anything else), an
// empty last item dropped; each item mended as Mend does.
func Split(s string, sep rune) []string {
	if sep == -1 {
		return []string{Mend(s)}
	}
	var out []string
	escaped := false
	token := ""
	for i, ch := range s {
		switch {
		case escaped:
			if ch != sep {
				token += `\`
			}
			token += string(ch)
			escaped = false
		case ch == '\\' && i < len(s)-1:
			escaped = true
		case ch == sep:
			out = append(out, token)
			token = ""
		default:
			token += string(ch)
		}
	}
	if token != "" {
		out = append(out, token)
	}
	return out
}

// passwdHome is uid's home directory in /etc/passwd, as os/user's pure Go
// lookup finds it. Not os/user itself: it links cgo into ledger (a
// dynamic binary unless built with CGO_ENABLED=0), and that ledger, on a
// loaded machine, lost a TERM sent while it routed a line to tether-pg
// (TestTermWindowPostgres; figures in bench/README's register).
func passwdHome(uid int) (string, bool) {
	b, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return "", false
	}
	want := strconv.Itoa(uid)
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ":")
		if len(f) >= 7 && f[2] == want && f[5] != "" {
			return f[5], true
		}
	}
	return "", false
}
