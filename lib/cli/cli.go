// Package cli is what every tether tool shares on its hot path: the
// "TOOL: " diagnostic prefix, --version, flag types for signals and
// durations, the generated parser's entry (FastParse), and stdout that
// reports a lost write. It does not link kong: parsing with kong's model
// (help, usage errors mapped to exit 2, completion) is lib/cli/kongcli's,
// which a tool's start-up pays for only where it imports it. Only
// lib/cmd/* imports either; the vocabulary they speak (exit codes,
// *exit.Error, signal and duration syntax) is lib/exit's and lib/syntax's.
//
// Only a tool's Main turns an error into an exit code; everything below it
// returns errors. An error that carries its own exit code is a
// *exit.Error.
package cli

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/internal/shortcut"
	"github.com/tether-sh/tether/lib/internal/sigpipe"
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
	return exit.Code(err, fallback)
}

// Completing reports whether the tool was started by a shell to complete
// a command line (bash's complete -C, or the zsh and fish functions
// install.sh installs): then COMP_LINE holds the line, and Parse prints
// the completions instead of parsing args.
func Completing() bool { return os.Getenv("COMP_LINE") != "" }

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
	Version PrintVersion `help:"Print the version and exit."`
}

// PrintVersion is the --version flag. Kong's model (lib/cli/kongcli)
// prints VersionText and exits 0 when it is given; the generated parser
// takes a lone --version only (LoneVersion) and leaves every other
// command line with it to kong.
type PrintVersion bool

// LoneVersion answers a command line that is "--version" alone, as kong
// would, without building kong's model: it reports whether args was one
// and the exit code. Answering it first saves a third of a millisecond,
// a third of what the tool costs to start.
func (t *Tool) LoneVersion(args []string) (code int, done bool) {
	if len(args) != 1 || args[0] != "--version" || Completing() || !shortcut.Take(shortcut.LoneVersion) {
		return 0, false
	}
	shortcut.Ran(shortcut.LoneVersion)
	fmt.Fprintln(t.Stdout, VersionText(t.Name))
	return t.Done(0), true
}
