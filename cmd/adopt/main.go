// Command adopt: see lib/cmd/adopt and CONTRACT.md §3.2.
package main

import (
	"os"

	"github.com/tether-sh/tether/lib/cmd/adopt"
)

func main() { os.Exit(adopt.Main(os.Args[1:])) }
