// Command stopbounded stops processes within a bound; see lib/cmd/stopbounded.
package main

import (
	"os"

	"github.com/tether-sh/tether/lib/cmd/stopbounded"
)

func main() { os.Exit(stopbounded.Main(os.Args[1:])) }
