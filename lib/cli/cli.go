// Package cli is the command-line plumbing every tether tool shares: kong
// wiring with usage errors mapped to exit 2, the "TOOL: " diagnostic prefix,
// --version, exit-code conventions, and parsers for signals and durations.
//
// Only a tool's Main turns an error into an exit code; everything below it
// returns errors. An error that carries its own exit code is an *ExitError.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/alecthomas/kong"
)

// Version is stamped at build time with
// -ldflags "-X github.com/tether-sh/tether/lib/cli.Version=v1.2.3".
var Version = ""

// Exit codes shared by every tool (SPEC §1).
const (
	ExitOK       = 0   // done
	ExitRefused  = 1   // refused, or the condition was not met
	ExitUsage    = 2   // usage error or bad input
	ExitSystem   = 3   // permission, I/O, corrupt store
	ExitDeadline = 124 // a deadline stopped the command
	ExitNotRun   = 125 // refused or failed before the command started (or something survived KILL)
	ExitNoExec   = 126 // command found but not executable
	ExitNotFound = 127 // command not found
)

// ExitError is an error that knows the exit code it should produce.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// Errorf returns an *ExitError with the given code and a formatted message.
// A %w verb keeps the wrapped error reachable through errors.Is.
func Errorf(code int, format string, args ...any) error {
	return &ExitError{Code: code, Err: fmt.Errorf(format, args...)}
}

// Code reports the exit code an error should produce: the code of the first
// *ExitError in its chain, or fallback.
func Code(err error, fallback int) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return fallback
}

// VersionString reports the version stamped into the binary, falling back
// to the module version recorded by the go tool, then "devel".
func VersionString() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// Tool is one command's identity and I/O.
type Tool struct {
	Name        string
	Description string // first line of --help
	Stdout      io.Writer
	Stderr      io.Writer
}

// New returns a Tool writing to the process's stdout, through an *Output
// (see Done), and stderr.
func New(name, description string) *Tool {
	return &Tool{Name: name, Description: description, Stdout: NewOutput(os.Stdout), Stderr: os.Stderr}
}

// Warnf prints one diagnostic line "TOOL: msg" on stderr.
func (t *Tool) Warnf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	fmt.Fprintf(t.Stderr, "%s: %s\n", t.Name, strings.TrimRight(msg, "\n"))
}

// Fail prints err as one diagnostic line and returns its exit code
// (fallback when err carries none).
func (t *Tool) Fail(err error, fallback int) int {
	t.Warnf("%v", err)
	return Code(err, fallback)
}

// exitPanic carries kong's requested exit out of Parse without exiting the
// process, so Main stays testable and only cmd/*/main.go calls os.Exit.
type exitPanic struct{ code int }

// Parse parses args into grammar. done reports that the caller should return
// code at once: --help and --version were served (0), or the arguments did
// not parse (2, after one line on stderr). Usage errors are always 2, never
// kong's default 80.
func (t *Tool) Parse(grammar any, args []string, options ...kong.Option) (ctx *kong.Context, code int, done bool) {
	// Answering a lone --version before building kong's model saves a
	// third of a millisecond: a third of what the tool costs to start.
	if len(args) == 1 && args[0] == "--version" {
		fmt.Fprintln(t.Stdout, t.Name+" "+VersionString())
		return nil, t.Done(0), true
	}
	opts := []kong.Option{
		kong.Name(t.Name),
		kong.Description(t.Description),
		kong.Writers(t.Stdout, t.Stderr),
		kong.Vars{"version": t.Name + " " + VersionString()},
		kong.Exit(func(code int) { panic(exitPanic{code}) }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true, NoExpandSubcommands: false}),
	}
	opts = append(opts, options...)
	defer func() {
		if r := recover(); r != nil {
			ep, ok := r.(exitPanic)
			if !ok {
				panic(r)
			}
			ctx, done = nil, true
			code = ep.code
			if code != 0 {
				code = ExitUsage
			}
			// --help or --version was served: was it written?
			code = t.Done(code)
		}
	}()
	parser, err := kong.New(grammar, opts...)
	if err != nil {
		// A grammar error is a programming error, but never a panic for the user.
		t.Warnf("internal error: %v", err)
		return nil, ExitSystem, true
	}
	ctx, err = parser.Parse(args)
	if err != nil {
		t.Warnf("%v", err)
		if errors.Is(err, ErrOutput) {
			return nil, ExitSystem, true // --help could not be written
		}
		return nil, Code(err, ExitUsage), true
	}
	return ctx, 0, false
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
