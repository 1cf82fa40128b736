package ledgercmd

import (
	"github.com/tether-sh/tether/lib/cli"
)

// The accelerator of the command line: cli.FastParse, which
// TETHER_NO_SHORTCUTS=1 or =fast-parse (see lib/internal/shortcut) turns
// off, sending every command line to kong. It may not change what a
// command line means, prints or exits with: the parser (lib/internal/argv, with the
// tables argv_gen.go generated from kong's model) takes only command lines
// kong parses, into the same grammar struct, which TestArgvMatchesKong and
// FuzzArgv check; the scenario suite runs with and without it.

// fastRun parses args without building kong's model and runs the command
// they select, when the generated parser is sure of them; done is false
// when kong must parse them (help, errors, completion).
func fastRun(t *cli.Tool, args []string) (code int, done bool) {
	var g grammar
	cmd, ok := cli.FastParse(argvGrammar, &g, args)
	if !ok {
		return 0, false
	}
	return result(t, cmd.Run(&g, &invocation{tool: t, g: &g, args: args})), true
}
