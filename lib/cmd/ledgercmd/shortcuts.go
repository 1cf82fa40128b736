package ledgercmd

import (
	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/internal/argv"
)

// The accelerator of the command line: cli.FastParse, which
// TETHER_NO_SHORTCUTS=1 or =fast-parse (see lib/internal/shortcut) turns
// off, sending every command line to kong. It may not change what a
// command line means, prints or exits with: the parser (lib/internal/argv, with the
// tables argv_gen.go generated from kong's model) takes only command lines
// kong parses, into the same grammar struct, which TestArgvMatchesKong and
// FuzzArgv check; the scenario suite runs with and without it.

// fastParse parses args without kong's model, when the generated parser
// is sure of them, into g, and returns the command they select; ok is
// false when kong must parse them (an error, a value the tables leave to
// kong, the shortcut turned off).
func fastParse(args []string) (cmd *argv.Node[grammar, *invocation], g *grammar, ok bool) {
	g = new(grammar)
	cmd, ok = cli.FastParse(argvGrammar, g, args)
	return cmd, g, ok
}
