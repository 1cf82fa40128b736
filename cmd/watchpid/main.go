// Command watchpid: see lib/cmd/watchpid and CONTRACT.md §4.
package main

import (
	"os"

	"github.com/tether-sh/tether/lib/cmd/watchpid"
)

func main() { os.Exit(watchpid.Main(os.Args[1:])) }
