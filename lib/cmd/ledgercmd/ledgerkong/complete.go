package ledgerkong

import (
	"github.com/posener/complete"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/cmd/ledgercmd"
)

// predictors complete job names and execution ids from the store the line
// being completed names, and statuses: the ledger binary's own
// (ledgercmd.Completers), for kongplete.
func predictors() map[string]complete.Predictor {
	out := map[string]complete.Predictor{}
	for name, c := range ledgercmd.Completers() {
		out[name] = complete.PredictFunc(func(a complete.Args) []string {
			return c(cli.CompleteArgs{All: a.All, Completed: a.Completed, Last: a.Last, LastCompleted: a.LastCompleted})
		})
	}
	return out
}
