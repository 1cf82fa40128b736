// Command kongfloor is hello world linking what every tether tool links
// for its grammar, kong and kongplete, and so running their package
// initialisation (kong compiles a regexp; net/url, which both import,
// makes a unique handle). bench/startup runs it beside ledger: the floor
// of a start-up that keeps kong as the grammar's source of truth.
package main

import (
	"fmt"

	_ "github.com/alecthomas/kong"
	_ "github.com/willabides/kongplete"
)

func main() { fmt.Println("hello, world") }
