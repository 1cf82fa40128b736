// Command tether-pg: ledger and adopt with the PostgreSQL store; see
// lib/cmd/tetherpg.
package main

import (
	"os"

	"github.com/tether-sh/tether/lib/cmd/tetherpg"
)

func main() { os.Exit(tetherpg.Main(os.Args[1:])) }
