// Package tetherpg is tether-pg: ledger and adopt with the PostgreSQL
// store linked in. ledger and adopt hand a command whose store is a
// postgres:// location to it ("tether-pg ledger ARGS...", "tether-pg adopt
// ARGS..."), so that their own start-up never pays for the database
// driver's initialisation (TLS, x509, net). It is installed next to them;
// nobody needs to call it by hand, though it works the same when called.
//
//	tether-pg ledger --ledger postgres:///jobs?host=/run/postgresql run nightly -- ./nightly.sh
package tetherpg

import (
	"fmt"
	"os"

	"github.com/tether-sh/tether/lib/cmd/adopt"
	"github.com/tether-sh/tether/lib/cmd/ledger"
	"github.com/tether-sh/tether/lib/ledger/location"
	_ "github.com/tether-sh/tether/lib/ledger/pgstore" // registers the PostgreSQL store
	"github.com/tether-sh/tether/lib/spec"
)

// Main runs the tool args[0] names (ledger or adopt) with the rest of
// args, and returns its exit code.
func Main(args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "ledger":
			return ledger.Main(args[1:])
		case "adopt":
			return adopt.Main(args[1:])
		}
	}
	fmt.Fprintf(os.Stderr, "%s: usage: %s ledger|adopt [ARGS...]\n", location.PostgresBinary, location.PostgresBinary)
	return spec.ExitUsage
}
