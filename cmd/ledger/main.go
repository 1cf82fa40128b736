// Command ledger: see lib/cmd/ledgercmd and CONTRACT.md §3.
package main

import (
	"os"

	"github.com/tether-sh/tether/lib/cmd/ledgercmd"
)

func main() { os.Exit(ledgercmd.Main(os.Args[1:])) }
