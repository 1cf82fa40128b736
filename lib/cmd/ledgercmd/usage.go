package ledgercmd

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/internal/argv"
)

// The usage errors ledger words itself, without kong: an unknown flag or
// command, a flag whose value is missing at the end of the line, a value
// its flag's type or enum refuses, a missing argument or required flag,
// each found by kong's own walk and checks (lib/internal/argv's tables,
// which take what kong takes, and say why a type refuses a value) and
// worded as kong and lib/cli/kongcli word it, with kong's "did you mean"
// (the candidates are the model's, from explain_gen.go), and read as kong
// reads them (a cluster of short flags, a short flag's glued value, a
// command after "--", bytes that are not UTF-8, mended as kong's string
// mapper mends them). TestExplainMatchesKong and FuzzExplain compare the
// two on every line: the same parse, or the same words and exit code;
// TestUsageErrorsMatchKong, in ledgerkong, the built binaries.

// usageError is the message kong gives for args, when the generated
// tables find the error kong stops at and it is one of those above; ok
// is false for any other line (one kong parses, or asks for help, or one
// where the tables cannot tell what kong says).
func usageError(args []string) (msg string, ok bool) {
	a, ok := answer(args)
	return a.usage, ok && a.usage != ""
}

// reply is what kong answers a command line the generated parser does
// not take: a usage error, or the --help of a command path, or the
// version.
type reply struct {
	usage   string
	help    []string // the command path whose --help is asked for
	asked   bool     // --help or -h
	version bool
}

// answer is kong's reply to args, when the generated tables can tell
// it: the first error of kong's walk, else the first of --help and
// --version the walk met (kong's hooks, which run before its checks),
// else the first error of kong's checks; ok is false for a line kong
// parses, or one where the tables cannot tell what kong says.
func answer(args []string) (r reply, ok bool) {
	var hook reply // the first --help or --version met
	var cmdPath []string
	node, names := argvGrammar(), completeTables
	path := []*argv.Node[grammar, *invocation]{node}
	namesPath := []*cli.CompleteNode{names}
	w := walk{given: map[*argv.Value[grammar]]string{}}
	positional := 0
	ended := false // after "--": arguments only
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--" && !ended:
			// The rest is CMD (kong keeps "--" as its first word), which
			// takes anything; else the rest is arguments, not flags.
			if positional < len(node.Positionals) && node.Positionals[positional].Passthrough {
				w.given[&node.Positionals[positional].Value] = a
				return w.end(hook, path, names, cmdPath)
			}
			ended = true
		case !ended && strings.HasPrefix(a, "--"):
			name, value, hasValue := strings.Cut(a, "=")
			if name == "--help" || name == "--version" {
				// kong's help flag and kongcli's version flag are
				// switches whose hook runs whatever their value.
				if hasValue {
					if err := argv.BoolError(value); err != nil {
						return reply{usage: name + ": " + err.Error()}, true
					}
				}
				hook.meet(name == "--help", name == "--version")
				continue
			}
			f, known := findFlag(path, strings.TrimPrefix(name, "--"), 0)
			if !known {
				if inModel(namesPath, name) {
					return reply{}, false // left out of the tables: none of ledger's
				}
				return reply{usage: unknownFlag(namesPath, name)}, true
			}
			if !hasValue && !f.Switch && i == len(args)-1 {
				return reply{usage: missingValue(f)}, true
			}
			if hasValue {
				if msg, ok := w.set(f, value); !ok {
					return reply{usage: msg}, msg != ""
				}
				continue
			}
			if msg, ok := w.takeValue(f, args, &i); !ok {
				return reply{usage: msg}, msg != ""
			}
		case !ended && a != "-" && strings.HasPrefix(a, "-"):
			if r, ok, stop := w.shorts(path, namesPath, &hook, args, &i); stop {
				return r, ok
			}
		case positional < len(node.Positionals):
			p := &node.Positionals[positional]
			positional++
			if p.Passthrough {
				w.given[&p.Value] = a
				return w.end(hook, path, names, cmdPath)
			} else if !w.positional(p, args, &i, ended) {
				return reply{}, false
			}
		default:
			// A command, after "--" too (the rest are then its
			// arguments, flags or not).
			next := childNamed(node, a)
			if next == nil {
				return reply{usage: unexpected(node, names, a)}, true
			}
			node, names = next, names.Child(a)
			if names == nil {
				return reply{}, false
			}
			path, namesPath = append(path, node), append(namesPath, names)
			cmdPath = append(cmdPath, a)
			positional = 0
		}
	}
	return w.end(hook, path, names, cmdPath)
}

// shorts reads args[*i], a cluster of short flags, as kong's scanner
// does: "-abc" is -a then "bc", -a's value when it takes one, else the
// short flags -b and -c, one byte each (a byte of a multi-byte letter
// too). stop reports that answer returns r and ok.
func (w *walk) shorts(path []*argv.Node[grammar, *invocation], namesPath []*cli.CompleteNode, hook *reply, args []string, i *int) (r reply, ok, stop bool) {
	a := args[*i]
	for k := 1; k < len(a); k++ {
		name, tail := "-"+a[k:k+1], a[k+1:]
		if name == "-h" {
			hook.meet(true, false) // kong's help flag, a switch
			continue
		}
		f, known := findFlag(path, "", a[k])
		if !known {
			if inModel(namesPath, name) {
				return reply{}, false, true
			}
			return reply{usage: unknownFlag(namesPath, name)}, true, true
		}
		if f.Switch {
			if msg, ok := w.set(f, "true"); !ok {
				return reply{usage: msg}, msg != "", true
			}
			continue
		}
		var msg string
		switch {
		case tail != "":
			msg, ok = w.set(f, tail)
		case *i == len(args)-1:
			return reply{usage: missingValue(f)}, true, true
		default:
			msg, ok = w.takeValue(f, args, i)
		}
		if !ok {
			return reply{usage: msg}, msg != "", true
		}
		break
	}
	return reply{}, false, false
}

// meet notes a --help (asked) or --version met on the line: the first
// one met is the hook kong runs.
func (h *reply) meet(asked, version bool) {
	if !h.asked && !h.version {
		*h = reply{asked: asked, version: version}
	}
}

// positional sets p from args[*i] and, for a slice, from the values that
// follow it (*i moves past them), as kong's walk takes them; false when
// the tables cannot tell what kong makes of one.
func (w *walk) positional(p *argv.Positional[grammar], args []string, i *int, ended bool) bool {
	if !p.Set(&w.g, args[*i]) {
		return false
	}
	w.given[&p.Value] = args[*i]
	for p.Slice && *i+1 < len(args) && (ended || args[*i+1] == "-" || !strings.HasPrefix(args[*i+1], "-")) {
		if *i++; !p.Set(&w.g, args[*i]) {
			return false
		}
	}
	return true
}

// childNamed is node's command named (or aliased) a, or nil.
func childNamed(node *argv.Node[grammar, *invocation], a string) *argv.Node[grammar, *invocation] {
	var next *argv.Node[grammar, *invocation]
	for _, c := range node.Children {
		if c.Name == a || slicesHas(c.Aliases, a) {
			next = c
		}
	}
	return next
}

// end is kong's reply to a line whose walk took every argument, on the
// command path p (path, with names the last node's model): the --help
// or --version met, if any (kong's hooks run before its checks), else
// the first error of the checks (validate).
func (w *walk) end(hook reply, path []*argv.Node[grammar, *invocation], names *cli.CompleteNode, p []string) (reply, bool) {
	if hook.asked || hook.version {
		hook.help = p
		return hook, true
	}
	msg, ok := w.validate(path, names)
	return reply{usage: msg}, ok
}

// walk is what usageError's walk has set: the grammar, and the values
// given, with the string each was given last.
type walk struct {
	g     grammar
	given map[*argv.Value[grammar]]string
}

// set sets the value of flag f to s. ok is false when it cannot: msg is
// then kong's error, as kongcli words it, when kong refuses s (what its
// type says of it), else "" (kong may read s otherwise).
func (w *walk) set(f *argv.Flag[grammar], s string) (msg string, ok bool) {
	if f.Set(&w.g, s) {
		w.given[&f.Value] = s
		return "", true
	}
	if f.Why != nil {
		var scratch grammar
		if err := f.Why(&scratch, s); err != nil {
			return "--" + f.Names[0] + ": " + err.Error(), false
		}
	}
	return "", false
}

// takeValue sets f, given as the argument args[*i], from the argument
// after it when f takes one (a value that starts with "-" is left to
// kong), and moves *i past it, as set.
func (w *walk) takeValue(f *argv.Flag[grammar], args []string, i *int) (msg string, ok bool) {
	if f.Switch {
		return w.set(f, "true")
	}
	if *i+1 >= len(args) {
		return "", false
	}
	next := args[*i+1]
	if next != "-" && strings.HasPrefix(next, "-") && !(f.Negative && cli.Negative(next)) {
		return flagForValue(f, next), false
	}
	*i++
	return w.set(f, next)
}

// flagForValue is kong's error for flag f followed by next, a flag, where
// its value was wanted, as kongcli words it, or "" when the tables cannot
// say it.
func flagForValue(f *argv.Flag[grammar], next string) string {
	name := "--" + f.Names[0]
	switch {
	case next == "--":
		return missingValue(f)
	case f.Expected == "":
		return ""
	}
	kind := "short flag"
	if strings.HasPrefix(next, "--") {
		kind = "long flag"
	}
	return fmt.Sprintf("%s: expected %s but got %q (%s); perhaps try %s=%q?", name, f.Expected, next, kind, name, next)
}

// validate is kong's Validate after a walk that took every argument, on
// the command path, names being its last node's model: a flag's value
// outside its enum (after the defaults), then a required flag missing,
// then a missing argument or command; ok is false when there is none
// (kong parses the line, or the tables leave it to kong).
func (w *walk) validate(path []*argv.Node[grammar, *invocation], names *cli.CompleteNode) (msg string, ok bool) {
	for _, n := range path {
		for i := range n.Flags {
			v := &n.Flags[i].Value
			if _, given := w.given[v]; !given && v.HasDefault && !v.Set(&w.g, v.Default) {
				return "", false
			}
		}
	}
	for _, n := range path {
		for i := range n.Flags {
			f := &n.Flags[i]
			got, given := w.given[&f.Value]
			if !given && f.HasDefault {
				got, given = f.Default, true
			}
			if f.Enum == nil || !given || f.Enum(&w.g) {
				continue
			}
			return unknownEnum(f, got), true
		}
		if len(n.Positionals) > 0 && n.Positionals[0].Enum != nil {
			return "", false // kong's "<arg> must be one of": not worded here
		}
	}
	for _, n := range path {
		var missing []string
		for i := range n.Flags {
			if _, given := w.given[&n.Flags[i].Value]; n.Flags[i].Required && !given {
				missing = append(missing, n.Flags[i].Summary)
			}
		}
		if len(missing) > 0 {
			slices.Sort(missing)
			return "missing flags: " + strings.Join(missing, ", "), true
		}
	}
	last := path[len(path)-1]
	var args, missing []string
	for i := range last.Positionals {
		if _, given := w.given[&last.Positionals[i].Value]; last.Positionals[i].Required && !given {
			args = append(args, last.Positionals[i].Summary)
		}
	}
	if len(args) > 0 {
		missing = append(missing, strconv.Quote(strings.Join(args, " ")))
	}
	if last.Run == nil {
		for _, c := range names.Children {
			missing = append(missing, strconv.Quote(c.Name))
		}
	}
	switch {
	case len(missing) == 0:
		return "", false
	case len(missing) == 1:
		return "expected " + missing[0], true
	case len(missing) > 5:
		missing = append(missing[:5], "...")
	}
	return "expected one of " + strings.Join(missing, ", "), true
}

// unknownEnum is kong's "--status must be one of ..." for got, as
// kongcli words it: unknown status "got" (want a or b).
func unknownEnum(f *argv.Flag[grammar], got string) string {
	want := f.EnumValues[len(f.EnumValues)-1]
	if len(f.EnumValues) > 1 {
		want = strings.Join(f.EnumValues[:len(f.EnumValues)-1], ", ") + " or " + want
	}
	// kong's enum check reads the value set, which its string mapper
	// mended.
	return fmt.Sprintf("unknown %s %q (want %s)", f.Names[0], argv.Mend(got), want)
}

// findFlag finds the flag of a long name (or a short letter) on the
// command path, nearest first, as kong looks for it.
func findFlag(path []*argv.Node[grammar, *invocation], long string, short byte) (*argv.Flag[grammar], bool) {
	for i := len(path) - 1; i >= 0; i-- {
		for j := range path[i].Flags {
			f := &path[i].Flags[j]
			if long != "" && slicesHas(f.Names, long) || short != 0 && f.Short == short {
				return f, true
			}
		}
	}
	return nil, false
}

// missingValue is kong's error for a flag that ends the line without its
// value, as kongcli words it (the flag by its long name, however given).
func missingValue(f *argv.Flag[grammar]) string {
	return "--" + f.Names[0] + ": missing its value"
}

// inModel reports whether a flag the tables leave out is in the model.
func inModel(path []*cli.CompleteNode, name string) bool {
	for _, n := range path {
		for _, f := range n.Flags {
			if slicesHas(f.Names, name) {
				return true
			}
		}
	}
	return false
}

// unknownFlag is kong's "unknown flag" with its candidates: the flags of
// the command path, ledger's first, each long then short.
func unknownFlag(path []*cli.CompleteNode, name string) string {
	var candidates []string
	for _, n := range path {
		for _, f := range n.Flags {
			candidates = append(candidates, f.Names...)
		}
	}
	return didYouMean(name, candidates, "unknown flag "+name)
}

// unexpected is kong's "unexpected argument" where a command or no more
// arguments were wanted, as kongcli words it: an unknown command, with
// the commands to choose from, when the command takes no arguments.
func unexpected(node *argv.Node[grammar, *invocation], names *cli.CompleteNode, word string) string {
	var commands []string
	for _, c := range names.Children {
		commands = append(commands, c.Name)
	}
	msg := didYouMean(word, commands, "unexpected argument "+word)
	if len(names.Args) > 0 || len(commands) == 0 {
		return msg
	}
	hint := ""
	if _, h, found := strings.Cut(msg, ", "); found {
		hint = " (" + h + ")"
	}
	return fmt.Sprintf("unknown command %q%s; the commands are %s", word, hint, strings.Join(commands, ", "))
}

// didYouMean is kong's findPotentialCandidates.
func didYouMean(needle string, haystack []string, prefix string) string {
	var close []string
	for _, c := range haystack {
		if strings.HasPrefix(c, needle) || levenshtein(c, needle) <= 2 {
			close = append(close, fmt.Sprintf("%q", c))
		}
	}
	switch len(close) {
	case 0:
		return prefix
	case 1:
		return prefix + ", did you mean " + close[0] + "?"
	}
	return prefix + ", did you mean one of " + strings.Join(close, ", ") + "?"
}

// levenshtein is the edit distance of a and b, in runes, as kong counts it.
func levenshtein(a, b string) int {
	f := make([]int, utf8.RuneCountInString(b)+1)
	for j := range f {
		f[j] = j
	}
	for _, ca := range a {
		j := 1
		fj1 := f[0]
		f[0]++
		for _, cb := range b {
			mn := min(f[j]+1, f[j-1]+1)
			if cb != ca {
				mn = min(mn, fj1+1)
			} else {
				mn = min(mn, fj1)
			}
			fj1, f[j] = f[j], mn
			j++
		}
	}
	return f[len(f)-1]
}

func slicesHas(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
