package toy

import (
	"bytes"
	"flag"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/tether-sh/tether/lib/cli/kongcli"
	"github.com/tether-sh/tether/lib/internal/argv"
	"github.com/tether-sh/tether/lib/internal/argv/argvgen"
	"github.com/tether-sh/tether/lib/internal/argv/argvtest"
)

var update = flag.Bool("update", false, "rewrite argv_gen.go")

func TestToyUpToDate(t *testing.T) {
	k, err := Model()
	if err != nil {
		t.Fatal(err)
	}
	want, err := argvgen.Generate("toy", k)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("argv_gen.go", want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("argv_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("argv_gen.go is stale; run: go test ./lib/internal/argv/argvtest/toy -run TestToyUpToDate -update")
	}
	// What the generator must leave to kong is not in the tables.
	for _, kongOnly := range []string{`"at"`, `"hooked"`, `"counter"`, `"a"`, `"b"`, `"help"`, `"version"`} {
		if bytes.Contains(got, []byte("Names: []string{"+kongOnly)) {
			t.Errorf("argv_gen.go takes --%s; want it left to kong", strings.Trim(kongOnly, `"`))
		}
	}
}

func kongParse(g *grammar, args []string) (string, bool) {
	t := kongcli.New("toy", func() string { return "A toy." })
	t.Stdout, t.Stderr = io.Discard, io.Discard
	ctx, _, done := t.Parse(g, args)
	if done {
		return "", false
	}
	return ctx.Command(), true
}

func checkArgv(t *testing.T, args []string) bool {
	t.Helper()
	return argvtest.Check(t, argvGrammar(), kongParse, args)
}

func TestToyArgvMatchesKong(t *testing.T) {
	for _, tc := range []struct {
		env      map[string]string
		args     []string
		accepted bool
	}{
		{args: []string{"run", "j", "--", "x"}, accepted: true},
		{args: []string{"run", "j", "x", "-y", "--z"}, accepted: true},
		{args: []string{"--dir", "/d", "-v", "--level", "warn", "--timeout=1m", "run", "j", "--every", "5s", "--keep", "0", "--older", "7d", "--exit-code=-3", "--note", "", "-n", "-1"}, accepted: false}, // "-1" as a separate value: kong's
		{args: []string{"--dir", "/d", "-v", "--level", "warn", "--timeout=1m", "run", "j", "--every", "5s", "--keep", "0", "--older", "7d", "--exit-code=-3", "--note", "", "-n", "12", "--u", "255", "--mode=b", "--signal", "KILL", "--", "x"}, accepted: true},
		{args: []string{"run", "j", "--u", "256", "--", "x"}},
		{args: []string{"run", "j", "--mode", "c", "--", "x"}},
		{args: []string{"run", "j", "--keep", "-1", "--", "x"}},
		{args: []string{"run", "j", "--keep=-1", "--", "x"}},
		{args: []string{"run", "j", "--every=-5s", "--", "x"}},
		{args: []string{"--level", "loud", "get"}},
		{args: []string{"--tag", "a", "--tag=b", "get", "1", "2"}, accepted: true},
		{args: []string{"--tag", "a,b", "get"}, accepted: true},
		{args: []string{"--tag", `a\,b,c\d,`, "get"}, accepted: true},
		{args: []string{"--tag=", "get"}},
		{args: []string{"--tag", "\xff,\xfe", "get"}, accepted: true},
		{args: []string{"--out", "rel/x", "get"}, accepted: true},
		{args: []string{"--out=/abs", "get"}, accepted: true},
		{args: []string{"--out", "~/x", "get"}, accepted: true},
		{args: []string{"--out", "~", "get"}, accepted: true},
		{args: []string{"--out", "-", "get"}, accepted: true},
		{args: []string{"--label", "n", "show", "1"}, accepted: true},
		{args: []string{"--at", "5s", "get"}},
		{args: []string{"--hooked", "x", "get"}},
		{args: []string{"--counter", "get"}},
		{args: []string{"group", "sub", "--x", "1"}, accepted: true},
		{args: []string{"group", "sub", "--x", "1", "y"}, accepted: true},
		{args: []string{"group", "sub", "--a"}},
		{args: []string{"group"}},
		{args: []string{"slow"}},
		{args: []string{"validated"}},
		{args: []string{"--version"}},
		{args: []string{"get", "--help"}},
		{args: []string{"get", "-vv"}, accepted: true},
		{args: []string{"get", "-vh"}},
		{args: []string{"--", "get"}, accepted: true},
		{env: map[string]string{"TOY_DIR": "/from/env"}, args: []string{"get"}, accepted: true},
		{env: map[string]string{"TOY_DIR": "/from/env"}, args: []string{"--dir", "/flag", "get"}, accepted: true},
		{env: map[string]string{"TOY_DIR": ""}, args: []string{"get"}},
		{env: map[string]string{"TOY_TIMEOUT": "2m"}, args: []string{"get"}, accepted: true},
		{env: map[string]string{"TOY_TIMEOUT2": "3m"}, args: []string{"get"}, accepted: true},
		{env: map[string]string{"TOY_TIMEOUT": "soon"}, args: []string{"get"}},
		{env: map[string]string{"TOY_TIMEOUT": "soon"}, args: []string{"--timeout", "1s", "get"}}, // kong resets it first: an error
	} {
		for k, v := range tc.env {
			t.Setenv(k, v)
		}
		if got := checkArgv(t, tc.args); got != tc.accepted {
			t.Errorf("env %v: argv.Parse(%q) accepted = %v; want %v", tc.env, tc.args, got, tc.accepted)
		}
		for k := range tc.env {
			os.Unsetenv(k)
		}
	}
}

// TestToyRun: the selected command's Run is the one kong would call.
func TestToyRun(t *testing.T) {
	var g grammar
	cmd, ok := argv.Parse(argvGrammar(), &g, []string{"group", "sub"})
	if !ok {
		t.Fatal("argv.Parse(group sub) declined")
	}
	var e Env
	if err := cmd.Run(&g, &e); err != nil || len(e.Ran) != 1 || e.Ran[0] != "sub" {
		t.Errorf("Run(group sub) = %v, ran %q; want nil, [sub]", err, e.Ran)
	}
}

func FuzzToyArgv(f *testing.F) {
	for _, s := range []string{
		"run\nj\n--every\n5s\n--\nx", "--tag\na\nget\n1", "group\nsub\n--x\n1\ny", "--label\nn\nshow", "-v\nget",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkArgv(t, strings.Split(s, "\n"))
	})
}

// TestToyLeftToKong: argvgen.LeftToKong names what toy's tables leave to
// kong: each flag the generator cannot read, a list, a command with a
// hook or a validator.
func TestToyLeftToKong(t *testing.T) {
	k, err := Model()
	if err != nil {
		t.Fatal(err)
	}
	gaps, err := argvgen.LeftToKong(k)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(gaps, "\n")
	for _, want := range []string{
		"toy --at: left out of the tables",     // kong's own mapper
		"toy --hooked: left out of the tables", // a hook
		"toy --counter: left out of the tables",
		"--tag: a list, whose empty value kong reads",
		"--tag: kong words a flag where its value was wanted",
		"group sub --a: left out of the tables", // an xor group
		"slow: every command line that reaches it is kong's",
		"validated: every command line that reaches it is kong's",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("LeftToKong(toy) = %q; want %q in it", gaps, want)
		}
	}
	if strings.Contains(got, "--dir") || strings.Contains(got, "--level") || strings.Contains(got, "run") {
		t.Errorf("LeftToKong(toy) = %q; want no flag or command the tables read", gaps)
	}
}
