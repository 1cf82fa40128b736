// Command ledger: see lib/cmd/ledger and CONTRACT.md §3.
package main

import (
	"os"

	"github.com/tether-sh/tether/lib/cmd/ledger"
)

func main() { os.Exit(ledger.Main(os.Args[1:])) }
