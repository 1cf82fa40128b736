// Package cli is the kong wiring every tether tool shares: parsing with
// usage errors mapped to exit 2, the "TOOL: " diagnostic prefix, --version,
// flag types for signals and durations, and stdout that reports a lost
// write. Only lib/cmd/* imports it; the vocabulary it speaks (exit codes,
// *spec.ExitError, signal and duration syntax) is lib/spec's.
//
// Only a tool's Main turns an error into an exit code; everything below it
// returns errors. An error that carries its own exit code is a
// *spec.ExitError.
package cli

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/alecthomas/kong"
	"github.com/posener/complete"
	"github.com/willabides/kongplete"

	"github.com/tether-sh/tether/lib/internal/manual"
	"github.com/tether-sh/tether/lib/internal/shortcut"
	"github.com/tether-sh/tether/lib/internal/sigpipe"
	"github.com/tether-sh/tether/lib/spec"
)

// Version is stamped at build time with
// -ldflags "-X github.com/tether-sh/tether/lib/cli.Version=v1.2.3";
// install.sh stamps 0.1.0-dev+COMMIT (COMMIT-dirty for a modified tree)
// until there is a release tag.
var Version = ""

// VersionString reports the version stamped into the binary, falling back
// to the module version recorded by the go tool, then "devel" (with the
// commit, when the go tool recorded one).
func VersionString() string {
	if Version != "" {
		return Version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	v := "devel"
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev != "" {
		v += "+" + rev[:min(len(rev), 7)] + dirty
	}
	return v
}

// VersionText is what --version prints: "TOOL VERSION" on the first line
// (scripts read that one), then the Go release and platform it was built
// with, which a bug report needs as much as the version.
func VersionText(tool string) string {
	return tool + " " + VersionString() + "\n" + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
}

// Tool is one command's identity and I/O.
type Tool struct {
	Name     string
	Describe func() string // --help's description; nil: none
	Stdout   io.Writer
	Stderr   io.Writer

	// Predictors complete the values of flags and arguments tagged
	// predictor:"NAME" when the tool is run by a shell's completion
	// (see Parse).
	Predictors map[string]complete.Predictor

	// RunsCommand reports whether a command line asks the tool to run a
	// command: a runner (ledger run, ledger spawn, adopt, reap, watchpid
	// … CMD). A runner's usage error exits 125 (spec.ExitNotRun), as
	// timeout's, env's and nice's do, so that a caller can tell it from
	// the command's own exit 2; every other usage error is 2. ctx is what
	// kong parsed before it failed (nil before any word), args the whole
	// command line. Nil: never a runner.
	RunsCommand func(ctx *kong.Context, args []string) bool
}

// UsageCode is the exit code of a usage error in the command line args:
// 125 when it asked to run a command (see RunsCommand), else 2.
func (t *Tool) UsageCode(ctx *kong.Context, args []string) int {
	if t.RunsCommand != nil && t.RunsCommand(ctx, args) {
		return spec.ExitNotRun
	}
	return spec.ExitUsage
}

// New returns a Tool writing to the process's stdout, through an *Output
// (see Done), and stderr. describe makes --help's description: it runs only
// when kong's model is built (help, a usage error, a verb the generated
// parser does not take), not on the start-up of every command.
func New(name string, describe func() string) *Tool {
	return &Tool{Name: name, Describe: describe, Stdout: NewOutput(os.Stdout), Stderr: new(stderr)}
}

// stderr is the process's standard error, written through a duplicate of
// descriptor 2 (sigpipe.Stderr), made at the first write: a diagnostic
// written to a pipe nobody reads fails with EPIPE instead of killing the
// tool with SIGPIPE, as a write to descriptor 2 itself would.
type stderr struct {
	once sync.Once
	f    *os.File
}

func (e *stderr) Write(p []byte) (int, error) {
	e.once.Do(func() { e.f = sigpipe.Stderr() })
	return e.f.Write(p)
}

// description is --help's description.
func (t *Tool) description() string {
	if t.Describe == nil {
		return ""
	}
	return t.Describe()
}

// Warnf prints a diagnostic on stderr: "TOOL: line" for each line of the
// message (an errors.Join of several errors has one each), so that every
// line says whose it is. What a message quotes (a --name label, a file
// name, a command's name) may hold a terminal escape: the other control
// characters are escaped (EscapeControl), never written raw.
func (t *Tool) Warnf(format string, args ...any) {
	msg := strings.TrimRight(fmt.Sprintf(format, args...), "\n")
	for _, line := range strings.Split(msg, "\n") {
		fmt.Fprintf(t.Stderr, "%s: %s\n", t.Name, EscapeControl(line))
	}
}

// Fail prints err as one diagnostic line and returns its exit code
// (fallback when err carries none).
func (t *Tool) Fail(err error, fallback int) int {
	t.Warnf("%v", err)
	return spec.Code(err, fallback)
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
		kong.Vars{"version": VersionText(t.Name)},
		kong.Exit(func(code int) { panic(exitPanic{code}) }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true, NoExpandSubcommands: false}),
		kong.ValueFormatter(manual.FlagHelp),
	}
	return kong.New(grammar, append(opts, options...)...)
}

// Completing reports whether the tool was started by a shell to complete
// a command line (bash's complete -C, or the zsh and fish functions
// install.sh installs): then COMP_LINE holds the line, and Parse prints
// the completions instead of parsing args.
func Completing() bool { return os.Getenv("COMP_LINE") != "" }

// Parse parses args into grammar. done reports that the caller should return
// code at once: --help and --version were served (0), or the arguments did
// not parse (2, or 125 for a runner, after one line on stderr: see
// RunsCommand), never kong's default 80. When Completing, Parse prints the completions of
// $COMP_LINE, one a line, and returns done with 0.
func (t *Tool) Parse(grammar any, args []string, options ...kong.Option) (ctx *kong.Context, code int, done bool) {
	// Answering a lone --version before building kong's model saves a
	// third of a millisecond: a third of what the tool costs to start.
	if len(args) == 1 && args[0] == "--version" && !Completing() && shortcut.Take(shortcut.LoneVersion) {
		shortcut.Ran(shortcut.LoneVersion)
		fmt.Fprintln(t.Stdout, VersionText(t.Name))
		return nil, t.Done(0), true
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
		return nil, spec.ExitSystem, true
	}
	if Completing() {
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
		if errors.Is(err, ErrOutput) {
			return nil, spec.ExitSystem, true // --help could not be written
		}
		var ee *spec.ExitError
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

// completeCommand completes a runner's CMD after "--" as bash completes
// one after sudo or timeout: the command's name from the executables on
// PATH, then nothing of the tool's own (the shell's default, file names,
// takes over). It reports whether the line was one.
func (t *Tool) completeCommand(parser *kong.Kong) bool {
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
	if dash < 0 || t.RunsCommand == nil || !t.RunsCommand(&kong.Context{Kong: parser}, args) {
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
				fmt.Fprintln(t.Stdout, name)
			}
		}
	}
	return true
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

// Subcommand is the subcommand a command line names: the first of its
// Words that is the name of one of parser's commands (a mistyped flag's
// value before it is passed over), or "" when there is none.
func Subcommand(parser *kong.Kong, args []string) string {
	words, _ := Words(parser, args)
	for _, w := range words {
		for _, c := range parser.Model.Children {
			if c.Type == kong.CommandNode && c.Name == w {
				return w
			}
		}
	}
	return ""
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

// CommandArgv returns the command a runner runs: cmd, the passthrough
// argument (arg:"" passthrough:"partial") parsed from the command line
// args, without the leading "--" kong leaves in it, and byte for byte as
// args gave it. A passthrough argument takes every argument from its
// first on, so its words are args' last ones; kong hands them on with
// bytes that are not UTF-8 replaced by U+FFFD, and a command's arguments
// (a file name, a pattern) must reach it untouched.
func CommandArgv(args, cmd []string) []string {
	if n := len(cmd); n <= len(args) {
		raw := args[len(args)-n:]
		for i, w := range cmd {
			if w != raw[i] && !mends(raw[i], w) {
				raw = cmd // not args' tail after all: keep what was parsed
				break
			}
		}
		cmd = raw
	}
	if len(cmd) > 0 && cmd[0] == "--" {
		return cmd[1:]
	}
	return cmd
}

// mends reports whether w is raw, which is not UTF-8, with each byte that
// is not (or each run of them) replaced by U+FFFD.
func mends(raw, w string) bool {
	return !utf8.ValidString(raw) && (w == string([]rune(raw)) || w == strings.ToValidUTF8(raw, "\uFFFD"))
}

// SplitCommand splits args at the first "--": the tool's own arguments
// before it, the command after it. hasCmd reports whether "--" was present.
func SplitCommand(args []string) (own, cmd []string, hasCmd bool) {
	for i, a := range args {
		if a == "--" {
			return args[:i:i], args[i+1:], true
		}
	}
	return args, nil, false
}

// VersionFlag is embedded by every tool's grammar.
type VersionFlag struct {
	Version kong.VersionFlag `help:"Print the version and exit."`
}
