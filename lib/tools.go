// Package lib exports every tether tool as a function, so that other
// projects' testscript suites can run ledger, adopt, watchpid, stopbounded
// and reap as script commands without installing them:
//
//	func TestMain(m *testing.M) {
//		testscript.Main(m, lib.ScriptCommands())
//	}
//
// Each tool is also importable as lib/cmd/<tool>.Main.
package lib

import (
	"os"

	"github.com/tether-sh/tether/lib/cmd/adopt"
	"github.com/tether-sh/tether/lib/cmd/ledger"
	"github.com/tether-sh/tether/lib/cmd/reap"
	"github.com/tether-sh/tether/lib/cmd/stopbounded"
	"github.com/tether-sh/tether/lib/cmd/watchpid"
)

// Tools maps each tool's name to its Main: arguments without the program
// name in, exit code out.
var Tools = map[string]func(args []string) int{
	"ledger":      ledger.Main,
	"adopt":       adopt.Main,
	"watchpid":    watchpid.Main,
	"stopbounded": stopbounded.Main,
	"reap":        reap.Main,
}

// ScriptCommands returns Tools in the form testscript.Main wants: each
// entry runs the tool on os.Args and exits the process with its code.
func ScriptCommands() map[string]func() {
	m := make(map[string]func(), len(Tools))
	for name, run := range Tools {
		m[name] = func() { os.Exit(run(os.Args[1:])) }
	}
	return m
}
