package ledger

import (
	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/internal/shortcut"
)

// The accelerators of the command line, fenced: run enters them only
// here, each through shortcut.Take, so that TETHER_NO_SHORTCUTS=1 (see
// lib/internal/shortcut) sends every command line to kong's full grammar.
// Neither may change what a command line means, prints or exits with:
// fast.go is held to kong by TestFastParseMatchesKong and FuzzFastParse,
// narrow.go by TestNarrowMatchesFull, and the scenario suite runs with
// and without them.

// fastRun runs args through the kong-free parser of fast.go when it
// accepts them; done is false when kong must parse them.
func fastRun(t *cli.Tool, args []string) (code int, done bool) {
	if !shortcut.Take(shortcut.FastParse) {
		return 0, false
	}
	var g grammar
	cmd, runCmd := fastParse(&g, args)
	if cmd == "" {
		return 0, false
	}
	return result(t, runCmd(&env{tool: t, g: &g})), true
}

// parseTarget returns what kong is to parse args into for g: a grammar
// narrowed to the one subcommand args name (narrow.go), with the function
// that copies the parsed values back into g, or g itself and a no-op.
func parseTarget(g *grammar, args []string) (target any, copyBack func()) {
	if shortcut.Take(shortcut.NarrowGrammar) {
		if target, copyBack, ok := narrowGrammar(g, args); ok {
			return target, copyBack
		}
	}
	return g, func() {}
}
