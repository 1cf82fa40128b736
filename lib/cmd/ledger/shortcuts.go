package ledger

import (
	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/internal/shortcut"
)

// The accelerator of the command line, fenced: run enters it only here,
// through shortcut.Take, so that TETHER_NO_SHORTCUTS=1 (see
// lib/internal/shortcut) sends every command line to kong. It may not
// change what a command line means, prints or exits with: fast.go is held
// to kong by TestFastParseMatchesKong and FuzzFastParse, and the scenario
// suite runs with and without it.
//
// (A second one, a kong grammar narrowed by reflection to the subcommand
// named, went: with the fast path serving claim, start and finish it saved
// nothing measurable on them, nor on ledger run.)

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
	return result(t, runCmd(&env{tool: t, g: &g, args: args})), true
}
