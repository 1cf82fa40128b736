// Command adopt: see lib/cmd/adopt and SPEC §1.
package main

import (
	"os"

	"github.com/tether-sh/tether/lib/cmd/adopt"
)

func main() { os.Exit(adopt.Main(os.Args[1:])) }
