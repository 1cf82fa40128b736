package cli

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// CompleteNode is a command of a tool's grammar as a shell's completion
// sees it, generated from the tool's kong model (lib/cmd/TOOL/complete_gen.go)
// so that a tool that does not link kong completes its own command line
// as kongplete would from the model: Complete's walk is kongplete's (and
// posener/complete's, which it drives), TestCompleteMatchesKong holds the
// two together.
type CompleteNode struct {
	Name     string
	Flags    []CompleteFlag
	Args     []CompleteValue // the positional arguments, in order
	Children []*CompleteNode
	// Cumulative: the last positional argument takes every value that
	// follows (a []string).
	Cumulative bool
}

// CompleteFlag is one flag: its names with their dashes ("--ledger",
// "-h") and how its value is completed.
type CompleteFlag struct {
	Names []string
	Value CompleteValue
}

// CompleteValue says how a value is completed: Switch, a flag without a
// value (nothing); Enum, one of these; Predictor, by the named predictor;
// else anything (nothing offered, nothing else either).
type CompleteValue struct {
	Switch    bool
	Enum      []string
	Predictor string
}

// CompleteArgs is the line being completed, as posener/complete splits
// it: All the words after the command's name, Completed all but the
// last, Last the word being completed ("" after a space).
type CompleteArgs struct {
	All, Completed      []string
	Last, LastCompleted string
}

// Completer lists the candidates of a named predictor.
type Completer func(a CompleteArgs) []string

// Complete prints to w the completions of $COMP_LINE (up to $COMP_POINT)
// in root's grammar, one a line: the words the line's last word starts.
func Complete(w io.Writer, root *CompleteNode, predictors map[string]Completer) {
	line := os.Getenv("COMP_LINE")
	if p, err := strconv.Atoi(os.Getenv("COMP_POINT")); err == nil && p >= 0 && p < len(line) {
		line = line[:p]
	}
	a := completeArgs(line)
	options, _ := root.predict(a, predictors)
	for _, o := range options {
		if strings.HasPrefix(o, a.Last) {
			fmt.Fprintln(w, o)
		}
	}
}

// completeArgs splits line as posener/complete's newArgs does.
func completeArgs(line string) CompleteArgs {
	parts := strings.Fields(line)
	if len(line) > 0 && unicode.IsSpace(rune(line[len(line)-1])) {
		parts = append(parts, "")
	}
	if len(parts) > 0 {
		parts = append(parts[:len(parts)-1], strings.Split(parts[len(parts)-1], "=")...)
	}
	var a CompleteArgs
	if len(parts) > 0 {
		a.All = parts[1:]
		a.Completed = parts[1 : len(parts)-1]
		a.Last = parts[len(parts)-1]
		if len(a.Completed) > 0 {
			a.LastCompleted = a.Completed[len(a.Completed)-1]
		}
	}
	return a
}

// from is a after its i-th word (a subcommand's).
func (a CompleteArgs) from(i int) CompleteArgs {
	a.All = a.All[min(i, len(a.All)-1)+1:]
	a.Completed = a.Completed[min(i, len(a.Completed)-1)+1:]
	return a
}

// predict is posener/complete's Command.predict over kongplete's command:
// a node's flags are its GlobalFlags, its positional arguments its Args.
func (n *CompleteNode) predict(a CompleteArgs, predictors map[string]Completer) (options []string, only bool) {
	found := false
	for i, arg := range a.Completed {
		if c := n.child(arg); c != nil {
			found = true
			if options, only = c.predict(a.from(i), predictors); only {
				return options, true
			}
			break
		}
	}
	if f := n.flag(a.LastCompleted); f != nil && !f.Value.Switch {
		return f.Value.predict(a, predictors), true
	}
	if strings.HasPrefix(a.Last, "-") {
		for _, f := range n.Flags {
			options = append(options, f.Names...)
		}
	}
	if found {
		return options, false
	}
	for _, c := range n.Children {
		options = append(options, c.Name)
	}
	if v := n.positional(a); v != nil {
		options = append(options, v.predict(a, predictors)...)
	}
	return options, false
}

func (n *CompleteNode) child(name string) *CompleteNode {
	for _, c := range n.Children {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func (n *CompleteNode) flag(name string) *CompleteFlag {
	for i := range n.Flags {
		if slices.Contains(n.Flags[i].Names, name) {
			return &n.Flags[i]
		}
	}
	return nil
}

// positional is the positional argument being completed, as kongplete's
// PositionalPredictor counts them: the completed words that are neither
// a flag of n nor a value of one.
func (n *CompleteNode) positional(a CompleteArgs) *CompleteValue {
	idx := 0
	for i := range a.Completed {
		if !n.flagOrValue(a.All, i) {
			idx++
		}
	}
	switch {
	case n.Cumulative && idx >= len(n.Args):
		return &n.Args[len(n.Args)-1]
	case idx < 0 || idx >= len(n.Args):
		return nil
	}
	return &n.Args[idx]
}

func (n *CompleteNode) flagOrValue(all []string, i int) bool {
	if i < 0 || i >= len(all) {
		return false
	}
	if n.flag(strings.Split(all[i], "=")[0]) != nil {
		return true
	}
	if i == 0 || strings.Contains(all[i-1], "=") {
		return false
	}
	f := n.flag(all[i-1])
	return f != nil && !f.Value.Switch
}

func (v *CompleteValue) predict(a CompleteArgs, predictors map[string]Completer) []string {
	switch {
	case v.Predictor != "":
		if p := predictors[v.Predictor]; p != nil {
			return p(a)
		}
	case len(v.Enum) > 0:
		return v.Enum
	}
	return nil
}

// CompleteCommand completes a runner's CMD after "--" as bash completes
// one after sudo or timeout: the command's name from the executables on
// PATH, then nothing of the tool's own (the shell's default, file names,
// takes over). runsCommand reports whether a command line (without the
// tool's name) asks to run a command. It reports whether the line was
// one.
func CompleteCommand(w io.Writer, runsCommand func(args []string) bool) bool {
	line := os.Getenv("COMP_LINE")
	if p, err := strconv.Atoi(os.Getenv("COMP_POINT")); err == nil && p >= 0 && p <= len(line) {
		line = line[:p]
	}
	words := strings.Fields(line)
	current := ""
	if len(words) > 0 && !strings.HasSuffix(line, " ") {
		current, words = words[len(words)-1], words[:len(words)-1]
	}
	if len(words) == 0 {
		return false
	}
	args := words[1:] // words[0] is the tool
	dash := slices.Index(args, "--")
	if dash < 0 || runsCommand == nil || !runsCommand(args) {
		return false
	}
	if dash != len(args)-1 || strings.Contains(current, "/") {
		return true // CMD's arguments, or a path: the shell's file names
	}
	seen := map[string]bool{}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		entries, _ := os.ReadDir(cmp.Or(dir, "."))
		for _, e := range entries {
			name := e.Name()
			if seen[name] || !strings.HasPrefix(name, current) {
				continue
			}
			if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				seen[name] = true
				fmt.Fprintln(w, name)
			}
		}
	}
	return true
}

// Child is n's command named name, or nil.
func (n *CompleteNode) Child(name string) *CompleteNode { return n.child(name) }
