// Package ledger is the ledger tool. (Being built; see the issue.)
package ledger

import "github.com/tether-sh/tether/lib/cli"

// Main runs ledger with args (without the program name) and returns its exit code.
func Main(args []string) int {
	return cli.New("ledger", "").Fail(cli.Errorf(cli.ExitSystem, "not built yet"), cli.ExitSystem)
}
