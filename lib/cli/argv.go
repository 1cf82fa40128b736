package cli

import (
	"github.com/tether-sh/tether/lib/internal/argv"
	"github.com/tether-sh/tether/lib/internal/shortcut"
)

// FastParse parses args into g without building kong's model, with the
// parser of lib/internal/argv and grammar, the tables generated from the
// tool's kong model (lib/cmd/TOOL/argv_gen.go), and returns the command
// it selected. ok is false when kong must parse args (help, an error, a
// shell completing, TETHER_NO_SHORTCUTS): then g is zero again, for Parse.
// It is for a tool that links kong, where kong's parse in process is the
// slow path the switch falls back to; the ledger binary, which does not,
// calls argv.Parse itself: there the generated parser is the only one,
// and TETHER_NO_SHORTCUTS does not apply to it.
func FastParse[G, E any](grammar func() *argv.Node[G, E], g *G, args []string) (cmd *argv.Node[G, E], ok bool) {
	if Completing() || !shortcut.Take(shortcut.FastParse) {
		return nil, false
	}
	shortcut.Ran(shortcut.FastParse)
	if cmd, ok = argv.Parse(grammar(), g, args); !ok {
		var zero G
		*g = zero
	}
	return cmd, ok
}
