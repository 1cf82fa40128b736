// Command watchpid: see lib/cmd/watchpid and SPEC §1.
package main

import (
	"os"

	"github.com/tether-sh/tether/lib/cmd/watchpid"
)

func main() { os.Exit(watchpid.Main(os.Args[1:])) }
