// Command stopbounded: see lib/cmd/stopbounded and SPEC §1.
package main

import (
	"os"

	"github.com/tether-sh/tether/lib/cmd/stopbounded"
)

func main() { os.Exit(stopbounded.Main(os.Args[1:])) }
