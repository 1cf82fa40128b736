package ledgercmd

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/internal/argv"
)

// outcome is what a parser makes of a command line: the command it
// selected and the grammar it filled, or what it printed and its exit
// code.
type outcome struct {
	cmd            string
	g              *grammar
	stdout, stderr string
	code           int
}

func (o outcome) String() string {
	if o.g != nil {
		return "parsed " + o.cmd
	}
	return fmt.Sprintf("stdout %q, stderr %q, exit %d", o.stdout, o.stderr, o.code)
}

// kongOutcome is what the ledger program makes of args with kong's model
// in process (tether-pg ledger, lib.Tools): run's slow path.
func kongOutcome(args []string) outcome {
	var out, errs strings.Builder
	t := cli.New("ledger", describe)
	t.Stdout, t.Stderr = &out, &errs
	g := new(grammar)
	ctx, code, done := explain(t, g, args)
	if !done {
		return outcome{cmd: lastWord(ctx.(*kong.Context).Command()), g: g}
	}
	if code == exit.Usage && checkUsage(args) {
		code = checkUsageUnknown(t) // as run does
	}
	return outcome{stdout: out.String(), stderr: errs.String(), code: code}
}

// describe is ledger's description, as ledgerkong gives it to kong (its
// Page's, which this package cannot import): the one of its --help.
func describe() string {
	text, _ := helpText("")
	_, text, _ = strings.Cut(text, "\n\n")
	text, _, _ = strings.Cut(text, "\n\nFlags:\n")
	return strings.ReplaceAll(text, "$", "$$") // kong interpolates it
}

// ownOutcome is what the ledger binary makes of args without kong: its
// help, the generated parser, its own usage errors (run with a nil
// Explainer); ok is false when it leaves args to kong.
func ownOutcome(args []string) (o outcome, ok bool) {
	var out, errs strings.Builder
	t := cli.New("ledger", nil)
	t.Stdout, t.Stderr = &out, &errs
	if code, done := help(t, args); done {
		return outcome{stdout: out.String(), stderr: errs.String(), code: code}, true
	}
	g := new(grammar)
	if cmd, ok := argv.Parse(argvGrammar(), g, args); ok {
		return outcome{cmd: cmd.Name, g: g}, true
	}
	code, ok := refuse(t, args)
	return outcome{stdout: out.String(), stderr: errs.String(), code: code}, ok
}

// lastWord is the selected command's name in kong's ctx.Command() ("claim
// <job>"; "ledger" for none).
func lastWord(cmd string) string {
	name := "ledger"
	for _, w := range strings.Fields(cmd) {
		if !strings.HasPrefix(w, "<") {
			name = w
		}
	}
	return name
}

// checkOutcome fails t unless the ledger binary answers args, without
// kong, exactly as kong's model does: the same command and every field
// of the grammar, or the same output and exit code.
func checkOutcome(t *testing.T, args []string) {
	t.Helper()
	want := kongOutcome(args)
	got, ok := ownOutcome(args)
	switch {
	case !ok:
		t.Errorf("ledger %q: left to kong; kong: %v", args, want)
	case got.g != nil && want.g != nil:
		if got.cmd != want.cmd || !reflect.DeepEqual(got.g, want.g) {
			t.Errorf("ledger %q = %s %+v; kong: %s %+v", args, got.cmd, *got.g, want.cmd, *want.g)
		}
	case got.String() != want.String():
		t.Errorf("ledger %q = %v; kong: %v", args, got, want)
	}
}

// explainCorpus are command lines the ledger binary once left to kong (in
// tether-pg), and their neighbours.
var explainCorpus = [][]string{
	// A path-typed flag's "~" (kong's ExpandPath) and "-" (kept).
	{"spawn", "job", "--log", "~/x.log", "--", "true"},
	{"spawn", "job", "--log=~", "--", "true"},
	{"spawn", "job", "--log", "~nobody/x", "--", "true"},
	{"spawn", "job", "--log", "-", "--", "true"},
	{"metrics", "-o", "~/x.prom"},
	{"metrics", "--output=~/"},
	{"metrics", "-o", "-"},
	{"metrics", "-o", "a/../b"},
	{"--ledger", "~/st", "list"},
	// Clusters of short flags, and a short flag's value glued to it.
	{"prune", "-nq"},
	{"prune", "-nn", "--keep", "1"},
	{"prune", "-nh"},
	{"prune", "-hn"},
	{"prune", "-n-"},
	{"prune", "-n5"},
	{"prune", "-né"},
	{"metrics", "-ox.prom"},
	{"metrics", "-o=x.prom"},
	{"metrics", "-o~/x"},
	{"metrics", "-o-"},
	{"metrics", "-oh"},
	{"metrics", "-ho"},
	{"list", "-xy"},
	{"list", "-é"},
	{"-1"},
	{"list", "-5"},
	// Arguments that are not UTF-8.
	{"claim", "\xff"},
	{"claim", "j\xffk\xfe", "--source", "a\xffb"},
	{"claim", "j", "--source=\xc3"},
	{"run", "j", "--", "echo", "\xff"},
	{"run", "j\xff", "echo", "\xff\xfe"},
	{"status", "a\xff", "b"},
	{"\xff"},
	{"list", "--\xff"},
	{"list", "--job", "\xff"},
	{"prune", "-\xff"},
	{"prune", "--keep", "\xff"},
	{"metrics", "-o", "\xff"},
	{"finish", "x", "--status", "\xff"},
	// A command after "--".
	{"--", "list"},
	{"--", "list", "--json"},
	{"--json", "--", "list"},
	{"--", "run", "j", "true"},
	{"--", "run", "j", "--", "true"},
	{"--", "bogus"},
	{"--", "--json"},
	{"--", "show", "x"},
	{"--", "--"},
	{"--", "--help"},
	{"list", "--", "--help"},
	{"-h", "--"},
	{"run", "j", "-h", "--", "-h"},
	{"--", "prune", "-n"},
	{"list", "--", "x"},
	// kong's own flags given a value.
	{"--help=false"},
	{"--help=false", "list"},
	{"--version=1"},
	{"list", "--help=true"},
	// A flag where a path's value was wanted.
	{"metrics", "-o", "-x"},
	{"metrics", "--output", "--json"},
	{"spawn", "j", "--log", "-x", "--", "true"},
}

// TestExplainMatchesKong: the ledger binary answers every command line of
// a corpus (the lines the older tests hold, and explainCorpus) without
// kong, and as kong's model answers it: the same parse, or the same help,
// error line and exit code. Nothing is left to tether-pg.
func TestExplainMatchesKong(t *testing.T) {
	t.Setenv("TETHER_LEDGER", t.TempDir())
	lines := append(append([][]string(nil), explainCorpus...), argvAccepted...)
	lines = append(lines, argvDeclined...)
	for _, tc := range usageCases {
		lines = append(lines, tc.args)
	}
	for _, tc := range answerCases {
		lines = append(lines, tc.args)
	}
	for _, args := range lines {
		checkOutcome(t, args)
	}
}

// FuzzExplain: whatever the command line, the ledger binary answers it
// as kong's model does. The input is the argument list joined by
// newlines.
func FuzzExplain(f *testing.F) {
	for _, args := range explainCorpus {
		f.Add(strings.Join(args, "\n"))
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkOutcome(t, strings.Split(s, "\n"))
	})
}
