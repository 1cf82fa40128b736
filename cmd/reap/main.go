// Command reap: see lib/cmd/reap and SPEC §1.
package main

import (
	"os"

	"github.com/tether-sh/tether/lib/cmd/reap"
)

func main() { os.Exit(reap.Main(os.Args[1:])) }
