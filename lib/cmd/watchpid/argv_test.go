package watchpid

import (
	"io"
	"strings"
	"testing"

	"github.com/tether-sh/tether/lib/cli/kongcli"
	"github.com/tether-sh/tether/lib/internal/argv/argvtest"
)

// kongParse parses args with kong: what Main does when the generated
// parser declines.
func kongParse(g *grammar, args []string) (string, bool) {
	t := kongcli.New(Page.Name, Page.Description)
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

// TestArgvMatchesKong: watchpid's command line is kong's alone. Its
// TARGETs end at the first argument that reads as no PID, where CMD
// starts (watchpid PID ls -d /): a decoder of its own (targets) that the
// generated parser cannot follow, so every line goes to kong, which costs
// watchpid ~2 ms of start-up. None may be taken without it.
func TestArgvMatchesKong(t *testing.T) {
	var accepted [][]string
	declined := [][]string{
		{"1"},
		{"1", "2@3", "--any", "-q", "--timeout", "5s"},
		{"--parent", "--status", "--json"},
		{"--id", "1", "2"},
		{"--grace=1s"},
		{"1", "ls", "-d", "/"},
		{"--help"},
		{"-h"},
		{"--version"},
		{"--bogus"},
		{"1", "-x"},
		{"-qq"},
		{"--any=false"},
	}
	for _, args := range accepted {
		if !checkArgv(t, args) {
			t.Errorf("argv.Parse(%q) declined; want it taken without kong", args)
		}
	}
	for _, args := range declined {
		if checkArgv(t, args) {
			t.Errorf("argv.Parse(%q) accepted; want it left to kong", args)
		}
	}
}

// FuzzArgv: whatever the generated parser accepts, kong parses alike. The
// input is the argument list joined by newlines.
func FuzzArgv(f *testing.F) {
	for _, args := range [][]string{
		{"1"},
		{"1", "2@3", "--any", "-q", "--timeout", "5s"},
		{"--parent", "--status", "--json"},
		{"--id", "1", "2"},
		{"--grace=1s"},
	} {
		f.Add(strings.Join(args, "\n"))
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkArgv(t, strings.Split(s, "\n"))
	})
}
