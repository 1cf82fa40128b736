package ledgercmd

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/internal/argv"
)

// The usage errors ledger words itself, without kong: an unknown flag, an
// unknown command and a flag whose value is missing at the end of the
// line, the slips a user makes, each found by kong's
// own walk (lib/internal/argv's tables, which take what kong takes) and
// worded as kong and lib/cli/kongcli word it, with kong's "did you mean"
// (the candidates are the model's, from explain_gen.go). Any other error
// of a command line — a value refused, a missing one, an argument
// missing — is still kong's, in tether-pg. TestUsageErrorsMatchKong
// compares the two over a corpus.

// usageError is the message kong gives for args, when the generated
// tables find the error kong's walk stops at and it is one of those
// above; ok is false for any other line.
func usageError(args []string) (msg string, ok bool) {
	node, names := argvGrammar(), completeTables
	path := []*argv.Node[grammar, *invocation]{node}
	namesPath := []*cli.CompleteNode{names}
	var g grammar
	positional := 0
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !utf8.ValidString(a) {
			return "", false
		}
		switch {
		case a == "--":
			return "", false
		case strings.HasPrefix(a, "--"):
			name, _, hasValue := strings.Cut(a, "=")
			f, known := findFlag(path, strings.TrimPrefix(name, "--"), 0)
			if !known {
				if inModel(namesPath, name) {
					return "", false // --help, --version: kong's
				}
				return unknownFlag(namesPath, name), true
			}
			if !hasValue && !f.Switch && i == len(args)-1 {
				return missingValue(f), true
			}
			if hasValue || !f.Switch && !takeValue(&g, f, args, &i) {
				return "", false
			}
		case a != "-" && strings.HasPrefix(a, "-"):
			c := a[1]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
				return "", false
			}
			f, known := findFlag(path, "", c)
			if !known {
				if inModel(namesPath, a[:2]) {
					return "", false
				}
				return unknownFlag(namesPath, a[:2]), true
			}
			if len(a) == 2 && !f.Switch && i == len(args)-1 {
				return missingValue(f), true
			}
			if len(a) != 2 || !f.Switch && !takeValue(&g, f, args, &i) {
				return "", false
			}
		case positional < len(node.Positionals):
			p := &node.Positionals[positional]
			positional++
			if p.Passthrough || !p.Set(&g, a) {
				return "", false
			}
			for p.Slice && i+1 < len(args) && (args[i+1] == "-" || !strings.HasPrefix(args[i+1], "-")) {
				if i++; !p.Set(&g, args[i]) {
					return "", false
				}
			}
		default:
			var next *argv.Node[grammar, *invocation]
			for _, c := range node.Children {
				if c.Name == a || slicesHas(c.Aliases, a) {
					next = c
				}
			}
			if next == nil {
				return unexpected(node, names, a), true
			}
			node, names = next, names.Child(a)
			if names == nil {
				return "", false
			}
			path, namesPath = append(path, node), append(namesPath, names)
			positional = 0
		}
	}
	return "", false
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

// takeValue sets f from the argument after args[*i], which must be a
// value the tables take (not one that starts with -).
func takeValue(g *grammar, f *argv.Flag[grammar], args []string, i *int) bool {
	if *i+1 >= len(args) || strings.HasPrefix(args[*i+1], "-") || !f.Set(g, args[*i+1]) {
		return false
	}
	*i++
	return true
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
