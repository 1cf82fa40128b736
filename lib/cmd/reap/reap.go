// Package reap is the reap tool. (Being built; see the issue.)
package reap

import "github.com/tether-sh/tether/lib/cli"

// Main runs reap with args (without the program name) and returns its exit code.
func Main(args []string) int {
	return cli.New("reap", "").Fail(cli.Errorf(cli.ExitSystem, "not built yet"), cli.ExitSystem)
}
