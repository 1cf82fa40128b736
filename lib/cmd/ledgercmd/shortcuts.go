package ledgercmd

import (
	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/internal/argv"
)

// The generated parser (lib/internal/argv, with the tables argv_gen.go
// generated from kong's model) takes only command lines kong parses, into
// the same grammar struct, which TestArgvMatchesKong and FuzzArgv check.
// In the ledger binary it is the parser: kong is not linked there, so
// TETHER_NO_SHORTCUTS has nothing to switch to and leaves it on; with
// kong linked in (ledgerkong.Main: tether-pg, lib.Tools, the scenarios)
// it is the fast-parse shortcut (cli.FastParse), which
// TETHER_NO_SHORTCUTS=1 or =fast-parse turns off, sending every command
// line to kong in process; the scenario suite runs with and without it.

// fastParse parses args without kong's model, when the generated parser
// is sure of them, into g, and returns the command they select; ok is
// false when kong must parse them (an error, a value the tables leave to
// kong, the shortcut turned off where kong is linked: explain is not
// nil).
func fastParse(args []string, explain Explainer) (cmd *argv.Node[grammar, *invocation], g *grammar, ok bool) {
	g = new(grammar)
	if explain == nil {
		if cmd, ok = argv.Parse(argvGrammar(), g, args); !ok {
			*g = grammar{}
		}
		return cmd, g, ok
	}
	cmd, ok = cli.FastParse(argvGrammar, g, args)
	return cmd, g, ok
}
