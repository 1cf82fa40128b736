// Package kongcli parses a tether tool's command line with kong's model:
// --help, --version, usage errors in tether's words with exit 2 (125 for a
// runner), and a shell's completion. It is the part of lib/cli that links
// kong, whose initialisation and reflection a tool pays for at every
// start-up once it imports it: ledger's binary does not (it parses with
// the generated tables of lib/internal/argv, and says its help, its
// usage errors and its completions from tables generated from its kong
// model), the other tools do.
//
//	t := kongcli.New("reap", Page.Description)
//	t.RunsCommand = func(*kong.Context, []string) bool { return true }
//	var g grammar
//	if _, code, done := t.Parse(&g, args); done {
//		return code
//	}
package kongcli

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"

	"github.com/alecthomas/kong"
	"github.com/posener/complete"
	"github.com/willabides/kongplete"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/internal/manual"
)

// Tool is a cli.Tool whose command line kong parses.
type Tool struct {
	*cli.Tool

	// Predictors complete the values of flags and arguments tagged
	// predictor:"NAME" when the tool is run by a shell's completion
	// (see Parse).
	Predictors map[string]complete.Predictor

	// RunsCommand reports whether a command line asks the tool to run a
	// command: a runner (ledger run, ledger spawn, adopt, reap, watchpid
	// … CMD). A runner's usage error exits 125 (exit.NotRun), as
	// timeout's, env's and nice's do, so that a caller can tell it from
	// the command's own exit 2; every other usage error is 2. ctx is what
	// kong parsed before it failed (nil before any word), args the whole
	// command line. Nil: never a runner.
	RunsCommand func(ctx *kong.Context, args []string) bool
}

// New returns cli.New(name, describe) for kong to parse with.
func New(name string, describe func() string) *Tool {
	return &Tool{Tool: cli.New(name, describe)}
}

// UsageCode is the exit code of a usage error in the command line args:
// 125 when it asked to run a command (see RunsCommand), else 2.
func (t *Tool) UsageCode(ctx *kong.Context, args []string) int {
	if t.RunsCommand != nil && t.RunsCommand(ctx, args) {
		return exit.NotRun
	}
	return exit.Usage
}

// exitPanic carries kong's requested exit out of Parse without exiting the
// process, so Main stays testable and only cmd/*/main.go calls os.Exit.
type exitPanic struct{ code int }

// Model returns kong's parser for grammar as Parse builds it: the model
// --help prints, which the man page and the package doc are made from.
func (t *Tool) Model(grammar any, options ...kong.Option) (*kong.Kong, error) {
	opts := []kong.Option{
		kong.Name(t.Name),
		kong.Description(t.description()),
		kong.Writers(t.Stdout, t.Stderr),
		kong.Vars{"version": cli.VersionText(t.Name)},
		kong.Exit(func(code int) { panic(exitPanic{code}) }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true, NoExpandSubcommands: false}),
		kong.ValueFormatter(manual.FlagHelp),
		kong.WithBeforeReset(printVersion),
	}
	for typ, what := range textTypes {
		opts = append(opts, kong.TypeMapper(typ, textMapper{what}))
	}
	return kong.New(grammar, append(opts, options...)...)
}

// description is --help's description.
func (t *Tool) description() string {
	if t.Describe == nil {
		return ""
	}
	return t.Describe()
}

// printVersion prints the version and exits 0 when a command line gave
// --version (cli.PrintVersion), as kong.VersionFlag does, before any
// other flag is checked.
func printVersion(app *kong.Kong, path *kong.Path, vars kong.Vars) error {
	if path.Flag == nil || path.Flag.Target.Type() != reflect.TypeFor[cli.PrintVersion]() {
		return nil
	}
	fmt.Fprintln(app.Stdout, vars["version"])
	app.Exit(0)
	return nil
}

// Parse parses args into grammar. done reports that the caller should return
// code at once: --help and --version were served (0), or the arguments did
// not parse (2, or 125 for a runner, after one line on stderr: see
// RunsCommand), never kong's default 80. When Completing, Parse prints the completions of
// $COMP_LINE, one a line, and returns done with 0.
func (t *Tool) Parse(grammar any, args []string, options ...kong.Option) (ctx *kong.Context, code int, done bool) {
	if code, done := t.LoneVersion(args); done {
		return nil, code, true
	}
	defer func() {
		if r := recover(); r != nil {
			ep, ok := r.(exitPanic)
			if !ok {
				panic(r)
			}
			ctx, done = nil, true
			code = ep.code
			if code != 0 {
				code = t.UsageCode(nil, args)
			}
			// --help or --version was served: was it written?
			code = t.Done(code)
		}
	}()
	parser, err := t.Model(grammar, options...)
	if err != nil {
		// A grammar error is a programming error, but never a panic for the user.
		t.Warnf("internal error: %v", err)
		return nil, exit.System, true
	}
	if cli.Completing() {
		if t.completeCommand(parser) {
			return nil, t.Done(0), true
		}
		// Completion errors go nowhere: stderr would garble the
		// user's prompt.
		kongplete.Complete(parser,
			kongplete.WithPredictors(t.Predictors),
			kongplete.WithErrorHandler(func(error) {}))
		return nil, t.Done(0), true
	}
	ctx, err = parser.Parse(args)
	if err != nil {
		var pe *kong.ParseError
		var partial *kong.Context
		if errors.As(err, &pe) {
			partial = pe.Context
		}
		t.Warnf("%v", missingValue(unknownValue(unknownCommand(parser, partial, err))))
		if errors.Is(err, cli.ErrOutput) {
			return nil, exit.System, true // --help could not be written
		}
		var ee *exit.Error
		if errors.As(err, &ee) {
			return nil, ee.Code, true
		}
		return nil, t.UsageCode(partial, args), true
	}
	return ctx, 0, false
}

// unknownCommand words kong's "unexpected argument X" where a subcommand
// was wanted as "unknown command "X"", with the commands to choose from:
// what a user who mistyped one needs to read.
func unknownCommand(parser *kong.Kong, ctx *kong.Context, err error) error {
	const prefix = "unexpected argument "
	msg := err.Error()
	if !strings.HasPrefix(msg, prefix) {
		return err
	}
	node := parser.Model.Node
	if ctx != nil {
		if sel := ctx.Selected(); sel != nil {
			node = sel
		}
	}
	if len(node.Positional) > 0 {
		return err
	}
	var names []string
	for _, c := range node.Children {
		if c.Type == kong.CommandNode && !c.Hidden {
			names = append(names, c.Name)
		}
	}
	if len(names) == 0 {
		return err
	}
	word, hint, _ := strings.Cut(strings.TrimPrefix(msg, prefix), ", ")
	if hint != "" {
		hint = " (" + hint + ")"
	}
	return fmt.Errorf("unknown command %q%s; the commands are %s", word, hint, strings.Join(names, ", "))
}

// completeCommand completes a runner's CMD after "--" (cli.CompleteCommand).
func (t *Tool) completeCommand(parser *kong.Kong) bool {
	if t.RunsCommand == nil {
		return false
	}
	return cli.CompleteCommand(t.Stdout, func(args []string) bool { return t.RunsCommand(&kong.Context{Kong: parser}, args) })
}

// kongEnum is kong's message for a value outside a flag's enum.
// Compiled on first use: only a usage error needs it.
var kongEnum = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^--(\S+) must be one of ((?:"[^"]*",?)+) but got (".*")$`)
})

// unknownValue words kong's "--status must be one of "a","b" but got "c""
// as tether words a bad value everywhere else: unknown status "c" (want
// a or b).
func unknownValue(err error) error {
	m := kongEnum().FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	values := strings.Split(strings.Trim(m[2], `"`), `","`)
	want := values[len(values)-1]
	if len(values) > 1 {
		want = strings.Join(values[:len(values)-1], ", ") + " or " + want
	}
	return fmt.Errorf("unknown %s %s (want %s)", m[1], m[3], want)
}

// kongExpected is kong's message for a flag whose value is missing or
// looks like a flag. Compiled on first use: only a usage error needs it.
var kongExpected = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(--\S+): expected (\w+) value but got (.*)$`)
})

// missingValue words kong's "--owner: expected value value but got "EOL"
// (<EOL>)" as "--owner: missing its value", and names the kind of value
// wanted with its article otherwise ("expected a duration value", not
// "expected duration value"; "expected a value" for kong's "value value"
// and "string value").
func missingValue(err error) error {
	if flag, ok := strings.CutSuffix(err.Error(), `: missing value, expecting "<arg>,..."`); ok {
		// A repeatable flag's (stopbounded --pidfile): not a list.
		return fmt.Errorf("%s: missing its value", flag)
	}
	m := kongExpected().FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	if strings.HasPrefix(m[3], `"EOL"`) || strings.HasPrefix(m[3], `"--" `) {
		// Nothing after it, or only the end of the flags.
		return fmt.Errorf("%s: missing its value", m[1])
	}
	what := "a value"
	switch kind := m[2]; {
	case kind == "value" || kind == "string":
	case strings.ContainsRune("aeiou", rune(kind[0])):
		what = "an " + kind + " value"
	default:
		what = "a " + kind + " value"
	}
	return fmt.Errorf("%s: expected %s but got %s", m[1], what, m[3])
}

// Words are the arguments of args before a first "--" that are neither
// flags of parser's top level nor such flags' values; dashdash reports
// whether there was a "--". A tool reads from them whether a command line
// that did not parse asked it to run a command.
func Words(parser *kong.Kong, args []string) (words []string, dashdash bool) {
	takesValue := map[string]bool{}
	for _, f := range parser.Model.Flags {
		v := !f.IsBool() && !f.IsCounter()
		takesValue["--"+f.Name] = v
		if f.Short != 0 {
			takesValue["-"+string(f.Short)] = v
		}
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return words, true
		case strings.HasPrefix(a, "-") && a != "-":
			if !strings.Contains(a, "=") && takesValue[a] {
				i++
			}
		default:
			words = append(words, a)
		}
	}
	return words, false
}
