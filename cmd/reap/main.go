// Command reap: see lib/cmd/reap and CONTRACT.md §4.
package main

import (
	"os"

	"github.com/tether-sh/tether/lib/cmd/reap"
)

func main() { os.Exit(reap.Main(os.Args[1:])) }
