package ledgercmd

import (
	"strings"
	"testing"
)

// usageCases are command lines and the usage error ledger words for
// each ("" when it is left to kong).
var usageCases = []struct {
	args []string
	want string
}{
	{[]string{"--bogus"}, "unknown flag --bogus"},
	{[]string{"list", "--jsonn"}, `unknown flag --jsonn, did you mean "--json"?`},
	{[]string{"claim", "j", "x"}, "unexpected argument x"},
	{[]string{"list", "-xy"}, `unknown flag -x, did you mean "-h"?`}, // kong reads the first letter
	// kong checks an enum after its walk: the unknown flag is its first error.
	{[]string{"finish", "x", "--status", "bad", "--b"}, `unknown flag --b, did you mean "-h"?`},
	{[]string{"claim"}, `expected "<job>"`},                                                                                                          // kong checks it after the walk
	{[]string{"claim", "--bogus"}, "unknown flag --bogus"},                                                                                           // ... so the walk's error comes first
	{[]string{"run", "j", "--every", "x", "--bogus"}, `--every: invalid duration "x"`},                                                               // the first error
	{[]string{"run", "j", "--every", "--bogus"}, `--every: expected a duration value but got "--bogus" (long flag); perhaps try --every="--bogus"?`}, // a flag for a value comes first
	{[]string{"recover", "--grace", "-5s", "--bogus"}, `--grace: invalid duration "-5s": must not be negative`},                                      // kongcli takes a negative duration
	{[]string{"metrics", "-o", "-x"}, `--output: expected a file value but got "-x" (short flag); perhaps try --output="-x"?`},
	{[]string{"finish", "x"}, "missing flags: --status=STRING"},
	{[]string{"finish", "--status", "bad"}, `unknown status "bad" (want completed or failed)`}, // before the missing <id>
	{[]string{"spawn", "j", "--scope=no", "--", "true"}, `unknown scope "no" (want auto, require or never)`},
	{[]string{"spawn", "j", "--", "true"}, ""}, // the default scope is in the enum
	{[]string{"list", "--json=maybe"}, `--json: bool value must be true, 1, yes, false, 0 or no but got "maybe"`},
	{[]string{"list", "--json=Yes"}, ""}, // kong reads it
	{[]string{"prune", "--keep", "0x10"}, `--keep: invalid count "0x10"`},
	{[]string{"finish", "x", "--status", "failed", "--exit-code", "0x1x"}, `--exit-code: expected a valid 64 bit int but got "0x1x"`},
	{[]string{"run", "j"}, `expected "<CMD> ..."`},
	{[]string{}, `expected one of "claim", "fence", "adopt", "start", "finish", ...`},
	{[]string{"--ledger"}, "--ledger: missing its value"},
	{[]string{"metrics", "-o"}, "--output: missing its value"},
	{[]string{"list", "--json", "--field"}, "--field: missing its value"},
	{[]string{"run", "j", "true", "--bogus"}, ""},          // CMD's
	{[]string{"list", "--", "x"}, "unexpected argument x"}, // after --
	{[]string{"--", "list"}, ""},                            // a command after --
	{[]string{"--help", "--bogus"}, "unknown flag --bogus"}, // the walk's error before kong's hooks
	{[]string{"--version", "--bogus"}, "unknown flag --bogus"},
	{[]string{"show", "--help"}, ""}, // help, not an error
	{[]string{"list", "--version"}, ""},
	{[]string{"--help=false", "--bogus"}, "unknown flag --bogus"}, // kong's own flags given a value
	{[]string{"--help=no", "--json=x"}, `--json: bool value must be true, 1, yes, false, 0 or no but got "x"`},
	{[]string{"--help=maybe"}, `--help: bool value must be true, 1, yes, false, 0 or no but got "maybe"`},
	{[]string{"run", "j", "--json=1", "--bogus"}, "unknown flag --bogus"}, // a switch given a value
	{[]string{"run", "j", "--json=sure", "--bogus"}, `--json: bool value must be true, 1, yes, false, 0 or no but got "sure"`},
	{[]string{"-1"}, `unknown flag -1, did you mean "-h"?`},                                 // not a letter
	{[]string{"prune", "-ny"}, `unknown flag -y, did you mean one of "-h", "-n"?`},          // a cluster
	{[]string{"metrics", "-hox", "-y"}, `unknown flag -y, did you mean one of "-h", "-o"?`}, // -o's value glued
	{[]string{"--", "list", "--json"}, "unexpected argument --json"},                        // a command after --
}

// TestUsageErrorLeavesToKong: usageError words the error kong's walk and
// checks stop at first, with every argument before it taken; any line
// where kong could stop earlier, or at something the tables cannot tell,
// is left to kong (TestUsageErrorsMatchKong, in ledgerkong, compares the
// words).
func TestUsageErrorLeavesToKong(t *testing.T) {
	for _, tc := range usageCases {
		got, ok := usageError(tc.args)
		if ok != (tc.want != "") || got != tc.want {
			t.Errorf("usageError(%q) = %q, %v; want %q", tc.args, got, ok, tc.want)
		}
	}
}

// answerCases are command lines with --help or --version and what
// kong answers.
var answerCases = []struct {
	args    []string
	version bool
	help    string // the command path, when help is asked
	usage   string
}{
	{args: []string{"--version", "list"}, version: true},
	{args: []string{"--json", "show", "--version"}, version: true},
	{args: []string{"show", "--help"}, help: "show"},
	{args: []string{"-h", "run", "j", "--", "true"}, help: "run"},
	{args: []string{"run", "j", "--help", "--", "true"}, help: "run"},
	{args: []string{"--help", "--version"}, help: ""},
	{args: []string{"--version", "-h"}, version: true},
	{args: []string{"show", "x", "y", "--help"}, usage: "unexpected argument y"},
	{args: []string{"prune", "--keep", "x", "--version"}, usage: `--keep: invalid count "x"`},
}

// TestAnswerHooks: a --help or --version anywhere in a line whose walk
// takes every argument is answered as kong's hooks answer it, the first
// one met winning, before kong's checks (a missing argument) and after
// the walk's errors; the help is the command path's.
func TestAnswerHooks(t *testing.T) {
	for _, tc := range answerCases {
		r, ok := answer(tc.args)
		if !ok || r.version != tc.version || r.usage != tc.usage || r.asked != (tc.help != "" || !tc.version && tc.usage == "") ||
			r.asked && strings.Join(r.help, " ") != tc.help {
			t.Errorf("answer(%q) = %+v, %v; want version %v, help of %q, usage %q", tc.args, r, ok, tc.version, tc.help, tc.usage)
		}
	}
}
