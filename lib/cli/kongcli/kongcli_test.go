package kongcli

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/alecthomas/kong"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/exit"
)

func TestParseExitCodes(t *testing.T) {
	type g struct {
		cli.VersionFlag
		N int `arg:""`
	}
	tests := []struct {
		args []string
		code int
		done bool
	}{
		{[]string{"--version"}, 0, true},
		{[]string{"--help"}, 0, true},
		{[]string{"--bogus"}, exit.Usage, true},
		{[]string{"notanumber"}, exit.Usage, true},
		{[]string{}, exit.Usage, true},
		{[]string{"3"}, 0, false},
	}
	for _, tt := range tests {
		var out, errOut stringsBuilder
		tool := &Tool{Tool: &cli.Tool{Name: "t", Stdout: &out, Stderr: &errOut}}
		var v g
		_, code, done := tool.Parse(&v, tt.args)
		if code != tt.code || done != tt.done {
			t.Errorf("Parse(%q) = %d, %v; want %d, %v (stderr %q)", tt.args, code, done, tt.code, tt.done, errOut.String())
		}
		if tt.code == exit.Usage && len(errOut.String()) < 4 || tt.code == exit.Usage && errOut.String()[:3] != "t: " {
			t.Errorf("Parse(%q) stderr = %q; want a line starting \"t: \"", tt.args, errOut.String())
		}
	}
}

// TestRunnerUsage: a runner's usage error is 125, everything else's 2;
// Words passes over flags and the values of the top level's, not a
// mistyped flag's.
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
		tl := &Tool{Tool: &cli.Tool{Name: "t", Stdout: &stringsBuilder{}, Stderr: &errOut}}
		tl.RunsCommand = func(ctx *kong.Context, args []string) bool {
			words, _ := Words(ctx.Kong, args)
			return ctx != nil && slices.Contains(words, "run")
		}
		return tl, &errOut
	}
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"run", "--gace", "1s", "--", "true"}, exit.NotRun, `t: unknown flag --gace, did you mean "--grace"?`},
		{[]string{"--ledger", "run", "list", "--bogus"}, exit.Usage, "t: unknown flag --bogus"},
		{[]string{"--ledgr", "x", "run", "--bogus"}, exit.NotRun, "t: unknown flag --ledgr"},
		{[]string{"--json", "list", "x"}, exit.Usage, `t: unexpected argument x`},
		{[]string{"frobnicate"}, exit.Usage, `t: unknown command "frobnicate"; the commands are run, list`},
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

func TestNegativeValues(t *testing.T) {
	type g struct {
		Grace  cli.Duration         `default:"5s"`
		Opt    cli.OptionalDuration `name:"opt"`
		Older  cli.Retention        `name:"older"`
		Keep   cli.Count            `name:"keep"`
		Force  bool                 `short:"f"`
		Target int                  `arg:"" optional:""`
	}
	tests := []struct {
		args   []string
		stderr string // "" when the parse succeeds
		check  func(g) bool
	}{
		{[]string{"--grace", "-5s"}, "t: --grace: invalid duration \"-5s\": must not be negative\n", nil},
		{[]string{"--grace=-5s"}, "t: --grace: invalid duration \"-5s\": must not be negative\n", nil},
		{[]string{"--grace", "-.5"}, "t: --grace: invalid duration \"-.5\": must not be negative\n", nil},
		{[]string{"--opt", "-1"}, "t: --opt: invalid duration \"-1\": must not be negative\n", nil},
		{[]string{"--older", "-7d"}, "t: --older: invalid duration \"-7d\": must not be negative\n", nil},
		{[]string{"--keep", "-1"}, "t: --keep: invalid count \"-1\": must not be negative\n", nil},
		{[]string{"--keep", "x"}, "t: --keep: invalid count \"x\"\n", nil},
		// a flag after a flag that wants a value is still not taken as its value
		{[]string{"--grace", "-f"}, "t: --grace: expected a duration value but got \"-f\" (short flag); perhaps try --grace=\"-f\"?\n", nil},
		{[]string{"--grace", "--keep", "1"}, "t: --grace: expected a duration value but got \"--keep\" (long flag); perhaps try --grace=\"--keep\"?\n", nil},
		{[]string{"--grace", "2", "--opt", "0", "--older", "7d", "--keep", "3", "-f", "4"}, "", func(v g) bool {
			return v.Grace.D() == 2*time.Second && v.Opt.Given && v.Older.D() == 7*24*time.Hour && v.Keep == 3 && v.Force && v.Target == 4
		}},
		{[]string{}, "", func(v g) bool { return v.Grace.D() == 5*time.Second && !v.Opt.Given && v.Keep == 0 }},
	}
	for _, tt := range tests {
		var out, errOut stringsBuilder
		tool := &Tool{Tool: &cli.Tool{Name: "t", Stdout: &out, Stderr: &errOut}}
		var v g
		_, code, _ := tool.Parse(&v, tt.args)
		if got := errOut.String(); got != tt.stderr {
			t.Errorf("Parse(%q) stderr = %q; want %q", tt.args, got, tt.stderr)
		}
		if tt.check != nil && (code != 0 || !tt.check(v)) {
			t.Errorf("Parse(%q) = %d, %+v; want 0 and the values given", tt.args, code, v)
		}
	}
}

func TestParseHelpLost(t *testing.T) {
	var g struct{ cli.VersionFlag }
	for _, args := range [][]string{{"--help"}, {"--version"}} {
		var stderr bytes.Buffer
		tool := &Tool{Tool: &cli.Tool{Name: "t", Stdout: cli.NewOutput(fullStdout{}), Stderr: &stderr}}
		_, code, done := tool.Parse(&g, args)
		if !done || code != exit.System || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), "cannot write output") {
			t.Errorf("Parse(%v) to a full stdout = %d, %v, stderr %q; want 3, one line", args, code, done, stderr.String())
		}
	}
}

type stringsBuilder struct{ b []byte }

func (s *stringsBuilder) Write(p []byte) (int, error) { s.b = append(s.b, p...); return len(p), nil }
func (s *stringsBuilder) String() string              { return string(s.b) }

// fullStdout fails every write with ENOSPC: a stdout on a full disk.
type fullStdout struct{}

func (fullStdout) Write([]byte) (int, error) { return 0, syscall.ENOSPC }
