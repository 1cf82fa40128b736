// Package adopt is the adopt tool. (Being built; see the issue.)
package adopt

import "github.com/tether-sh/tether/lib/cli"

// Main runs adopt with args (without the program name) and returns its exit code.
func Main(args []string) int {
	return cli.New("adopt", "").Fail(cli.Errorf(cli.ExitSystem, "not built yet"), cli.ExitSystem)
}
