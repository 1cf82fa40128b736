package cli

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/tether-sh/tether/lib/spec"
)

func TestSplitCommand(t *testing.T) {
	tests := []struct {
		in       []string
		own, cmd []string
		has      bool
	}{
		{[]string{"1", "2"}, []string{"1", "2"}, nil, false},
		{[]string{"1", "--", "sleep", "--", "x"}, []string{"1"}, []string{"sleep", "--", "x"}, true},
		{[]string{"--"}, []string{}, []string{}, true},
	}
	for _, tt := range tests {
		own, cmd, has := SplitCommand(tt.in)
		if !slices.Equal(own, tt.own) || !slices.Equal(cmd, tt.cmd) || has != tt.has {
			t.Errorf("SplitCommand(%q) = %q, %q, %v; want %q, %q, %v", tt.in, own, cmd, has, tt.own, tt.cmd, tt.has)
		}
	}
}

func TestParseExitCodes(t *testing.T) {
	type g struct {
		VersionFlag
		N int `arg:""`
	}
	tests := []struct {
		args []string
		code int
		done bool
	}{
		{[]string{"--version"}, 0, true},
		{[]string{"--help"}, 0, true},
		{[]string{"--bogus"}, spec.ExitUsage, true},
		{[]string{"notanumber"}, spec.ExitUsage, true},
		{[]string{}, spec.ExitUsage, true},
		{[]string{"3"}, 0, false},
	}
	for _, tt := range tests {
		var out, errOut stringsBuilder
		tool := &Tool{Name: "t", Stdout: &out, Stderr: &errOut}
		var v g
		_, code, done := tool.Parse(&v, tt.args)
		if code != tt.code || done != tt.done {
			t.Errorf("Parse(%q) = %d, %v; want %d, %v (stderr %q)", tt.args, code, done, tt.code, tt.done, errOut.String())
		}
		if tt.code == spec.ExitUsage && len(errOut.String()) < 4 || tt.code == spec.ExitUsage && errOut.String()[:3] != "t: " {
			t.Errorf("Parse(%q) stderr = %q; want a line starting \"t: \"", tt.args, errOut.String())
		}
	}
}

type stringsBuilder struct{ b []byte }

func (s *stringsBuilder) Write(p []byte) (int, error) { s.b = append(s.b, p...); return len(p), nil }
func (s *stringsBuilder) String() string              { return string(s.b) }

// TestRunnerUsage: a runner's usage error is 125, everything else's 2;
// Subcommand finds the subcommand past flags and a mistyped flag's value.
func TestRunnerUsage(t *testing.T) {
	type run struct {
		Grace string   `placeholder:"D"`
		Cmd   []string `arg:"" optional:"" passthrough:"partial"`
	}
	type g struct {
		Ledger string `placeholder:"DIR"`
		JSON   bool
		Run    run      `cmd:""`
		List   struct{} `cmd:""`
	}
	tool := func() (*Tool, *stringsBuilder) {
		var errOut stringsBuilder
		tl := &Tool{Name: "t", Stdout: &stringsBuilder{}, Stderr: &errOut}
		tl.RunsCommand = func(ctx *kong.Context, args []string) bool {
			return ctx != nil && Subcommand(ctx.Kong, args) == "run"
		}
		return tl, &errOut
	}
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"run", "--gace", "1s", "--", "true"}, spec.ExitNotRun, `t: unknown flag --gace, did you mean "--grace"?`},
		{[]string{"--ledger", "run", "list", "--bogus"}, spec.ExitUsage, "t: unknown flag --bogus"},
		{[]string{"--ledgr", "x", "run", "--bogus"}, spec.ExitNotRun, "t: unknown flag --ledgr"},
		{[]string{"--json", "list", "x"}, spec.ExitUsage, `t: unexpected argument x`},
		{[]string{"frobnicate"}, spec.ExitUsage, `t: unknown command "frobnicate"; the commands are run, list`},
	}
	for _, tt := range tests {
		tl, errOut := tool()
		var v g
		_, code, done := tl.Parse(&v, tt.args)
		if !done || code != tt.code || !strings.HasPrefix(errOut.String(), tt.msg) {
			t.Errorf("Parse(%q) = %d, %v, %q; want %d, %q", tt.args, code, done, errOut.String(), tt.code, tt.msg)
		}
	}
}

func TestUnknownValue(t *testing.T) {
	for in, want := range map[string]string{
		`--status must be one of "completed","failed" but got "ok"`:     `unknown status "ok" (want completed or failed)`,
		`--scope must be one of "auto","require","never" but got "x y"`: `unknown scope "x y" (want auto, require or never)`,
		`unknown flag --x`: `unknown flag --x`,
	} {
		if got := unknownValue(errors.New(in)).Error(); got != want {
			t.Errorf("unknownValue(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestMissingValue(t *testing.T) {
	for in, want := range map[string]string{
		`--owner: expected value value but got "EOL" (<EOL>)`:                                                 `--owner: missing its value`,
		`--status: expected string value but got "EOL" (<EOL>)`:                                               `--status: missing its value`,
		`--owner: expected value value but got "--exclusive" (long flag); perhaps try --owner="--exclusive"?`: `--owner: expected a value but got "--exclusive" (long flag); perhaps try --owner="--exclusive"?`,
		`--grace: expected duration value but got "--keep" (long flag); perhaps try --grace="--keep"?`:        `--grace: expected a duration value but got "--keep" (long flag); perhaps try --grace="--keep"?`,
		`--n: expected int value but got "-x" (short flag)`:                                                   `--n: expected an int value but got "-x" (short flag)`,
		`--deadline: expected duration value but got "--" (long flag); perhaps try --deadline="--"?`:          `--deadline: missing its value`,
		`--pidfile: missing value, expecting "<arg>,..."`:                                                     `--pidfile: missing its value`,
		`unknown flag --x`: `unknown flag --x`,
	} {
		if got := missingValue(errors.New(in)).Error(); got != want {
			t.Errorf("missingValue(%q) = %q; want %q", in, got, want)
		}
	}
}

// TestCommandArgv: a runner's command is args' tail, byte for byte, without
// kong's leading "--"; what kong parsed is kept when it is not that tail.
func TestCommandArgv(t *testing.T) {
	tests := []struct {
		args, cmd, want []string
	}{
		{[]string{"--grace", "1s", "--", "true"}, []string{"--", "true"}, []string{"true"}},
		{[]string{"sh", "-c", "x"}, []string{"sh", "-c", "x"}, []string{"sh", "-c", "x"}},
		{[]string{"--", "printf", "a\xffb"}, []string{"--", "printf", "a\uFFFDb"}, []string{"printf", "a\xffb"}},
		{[]string{"/p\xff\xfe"}, []string{"/p\uFFFD\uFFFD"}, []string{"/p\xff\xfe"}},
		{nil, nil, nil},
		// Not the tail (a caller's own list): what was parsed.
		{[]string{"a", "b"}, []string{"c"}, []string{"c"}},
		{[]string{"x\xff"}, []string{"y\uFFFD"}, []string{"y\uFFFD"}},
		{[]string{"a"}, []string{"a", "b"}, []string{"a", "b"}},
	}
	for _, tt := range tests {
		if got := CommandArgv(tt.args, tt.cmd); !slices.Equal(got, tt.want) {
			t.Errorf("CommandArgv(%q, %q) = %q; want %q", tt.args, tt.cmd, got, tt.want)
		}
	}
}

// TestWarnf: every line of a diagnostic is the tool's, and no control
// character a message quotes reaches the terminal raw.
func TestWarnf(t *testing.T) {
	tests := []struct{ msg, want string }{
		{"plain", "t: plain\n"},
		{"trailing\n", "t: trailing\n"},
		{errors.Join(errors.New("one"), errors.New("two")).Error(), "t: one\nt: two\n"},
		{"label x\x1b[31m survived", "t: label x\\x1b[31m survived\n"},
		{"tab\there", "t: tab\\there\n"},
	}
	for _, tt := range tests {
		var b strings.Builder
		tool := &Tool{Name: "t", Stderr: &b}
		tool.Warnf("%s", tt.msg)
		if b.String() != tt.want {
			t.Errorf("Warnf(%q) wrote %q; want %q", tt.msg, b.String(), tt.want)
		}
	}
}
