package stopbounded

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

// TestArgvMatchesKong: what the generated parser takes, kong parses to
// the same values; what it leaves to kong is help, errors and what it
// cannot be sure of.
func TestArgvMatchesKong(t *testing.T) {
	accepted := [][]string{
		{"1"},
		{"--grace", "1s", "--signal", "INT", "1", "2"},
		{"--schedule", "TERM/5/KILL/5", "--tree", "--list", "1"},
		{"--pidfile", "/run/x.pid", "--pidfile=rel.pid", "-q", "--json"},
		{"--group", "--within", "1@2", "--name", "web", "42"},
		// kong's list and path mappers: split at ",", "~/" at home
		{"--pidfile", "a,b", "1"},
		{"--pidfile", `a\,b,c\d`, "1"},
		{"--pidfile", "~/x", "1"},
	}
	declined := [][]string{
		{"--help"},
		{"-h"},
		{"--version"},
		{"--bogus"},
		{"--pidfile=", "1"}, // an empty list: kong's
		{"--signal", "BOGUS", "1"},
		{"--schedule", "", "1"},
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
		{"--grace", "1s", "--signal", "INT", "1", "2"},
		{"--schedule", "TERM/5/KILL/5", "--tree", "--list", "1"},
		{"--pidfile", "/run/x.pid", "--pidfile=rel.pid", "-q", "--json"},
		{"--group", "--within", "1@2", "--name", "web", "42"},
	} {
		f.Add(strings.Join(args, "\n"))
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkArgv(t, strings.Split(s, "\n"))
	})
}
