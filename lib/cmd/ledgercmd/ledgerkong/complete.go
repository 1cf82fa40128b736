package ledgerkong

import (
	"os"
	"strings"

	"github.com/posener/complete"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/location"
)

// predictors complete job names and execution ids from the store the line
// being completed names (its --ledger, else the default), read-only: a
// completion never creates a store or waits for its lock.
func predictors() map[string]complete.Predictor {
	return map[string]complete.Predictor{
		"job": complete.PredictFunc(func(a complete.Args) []string {
			jobs, _ := names(a, false)
			return jobs
		}),
		"execution": complete.PredictFunc(func(a complete.Args) []string {
			_, ids := names(a, false)
			return ids
		}),
		// list --status: every status a record can be in.
		"status": complete.PredictSet(statuses()...),
		// Executions that may still be claimed or running: what adopt,
		// start, fence and finish can act on.
		"active": complete.PredictFunc(func(a complete.Args) []string {
			_, ids := names(a, true)
			return ids
		}),
	}
}

// statuses are the statuses a record can be in, in their order of life.
func statuses() []string {
	var out []string
	for _, s := range ledger.Statuses {
		out = append(out, string(s))
	}
	return out
}

// names lists the store's jobs and ids; none when there is no store.
func names(a complete.Args, activeOnly bool) (jobs, ids []string) {
	return location.Names(storeOf(a), activeOnly)
}

// storeOf is the store directory the line being completed names, or ""
// when it names none and there is no default. The whole line is read:
// the arguments a predictor is given start after the subcommand, and
// --ledger is usually before it.
func storeOf(complete.Args) string {
	dir := ""
	words := strings.Fields(os.Getenv("COMP_LINE"))
	for i, w := range words {
		if v, ok := strings.CutPrefix(w, "--ledger="); ok {
			dir = v
		} else if w == "--ledger" && i+1 < len(words) {
			dir = words[i+1]
		}
	}
	dir, err := location.Resolve(dir)
	if err != nil {
		return ""
	}
	return dir
}
