// Package stopbounded is the stopbounded tool. (Being built; see the issue.)
package stopbounded

import "github.com/tether-sh/tether/lib/cli"

// Main runs stopbounded with args (without the program name) and returns its exit code.
func Main(args []string) int {
	return cli.New("stopbounded", "").Fail(cli.Errorf(cli.ExitSystem, "not built yet"), cli.ExitSystem)
}
