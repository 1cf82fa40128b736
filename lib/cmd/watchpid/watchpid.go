// Package watchpid is the watchpid tool. (Being built; see the issue.)
package watchpid

import "github.com/tether-sh/tether/lib/cli"

// Main runs watchpid with args (without the program name) and returns its exit code.
func Main(args []string) int {
	return cli.New("watchpid", "").Fail(cli.Errorf(cli.ExitSystem, "not built yet"), cli.ExitSystem)
}
