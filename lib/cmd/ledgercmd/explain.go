package ledgercmd

import (
	"fmt"
	"os"
	"strings"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/internal/argv"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/location"
)

// What ledger says about its own command line, without kong: --help and a
// shell's completion, from explain_gen.go, which lib/cmd/tetherdoc
// generates from kong's model (TestArgvUpToDate fails when it is stale;
// TestHelpMatchesKong and TestCompleteMatchesKong in ledgerkong compare
// them with what the model says).

// complete prints the completions of $COMP_LINE: a runner's CMD from
// PATH after "--", else as kongplete would from the model. Job names and
// ids come from the store the line names when it is a folder; a
// database's are not listed (completing never connects, nor execs
// tether-pg).
func complete(t *cli.Tool) int {
	if !cli.CompleteCommand(t.Stdout, RunsCommand) {
		cli.Complete(t.Stdout, completeTables, Completers())
	}
	return t.Done(exit.OK)
}

// Completers are the predictors the grammar's predictor tags name: job
// names and execution ids from the store the line being completed names
// (read-only: a completion never creates a store or waits for its lock),
// and the statuses a record can be in.
func Completers() map[string]cli.Completer {
	return map[string]cli.Completer{
		"job": func(cli.CompleteArgs) []string {
			jobs, _ := location.Names(completionStore(), false)
			return jobs
		},
		"execution": func(cli.CompleteArgs) []string {
			_, ids := location.Names(completionStore(), false)
			return ids
		},
		// Executions that may still be claimed or running: what adopt,
		// start, fence and finish can act on.
		"active": func(cli.CompleteArgs) []string {
			_, ids := location.Names(completionStore(), true)
			return ids
		},
		"status": func(cli.CompleteArgs) []string {
			var out []string
			for _, s := range ledger.Statuses {
				out = append(out, string(s))
			}
			return out
		},
	}
}

// completionStore is the store the line being completed names, or ""
// when it names none and there is no default. The whole line is read:
// the arguments a predictor is given start after the subcommand, and
// --ledger is usually before it.
func completionStore() string {
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

// help prints the --help of a command line that asks only for it: a
// command path ("", "run") and --help or -h, nothing else; done is false
// for any other line (the parsers have it).
func help(t *cli.Tool, args []string) (code int, done bool) {
	var path []string
	asked := false
	node := argvGrammar()
	for _, a := range args {
		switch a {
		case "--help", "-h":
			asked = true
			continue
		}
		var next *argv.Node[grammar, *invocation]
		for _, c := range node.Children {
			if c.Name == a {
				next = c
			}
		}
		if next == nil {
			return 0, false
		}
		node, path = next, append(path, a)
	}
	text, ok := helpText(strings.Join(path, " "))
	if !asked || !ok {
		return 0, false
	}
	if _, err := fmt.Fprint(t.Stdout, text); err != nil {
		return t.Fail(err, exit.System), true
	}
	return t.Done(exit.OK), true
}
