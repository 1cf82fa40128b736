// Package tetherpg is tether-pg: ledger and adopt for a PostgreSQL store,
// with the database driver linked in. The router of ledger and adopt
// (lib/cmd/internal/store.Route) execs it in their place, before any
// subcommand runs or signal is caught, for a command whose store is a
// postgres:// location ("tether-pg ledger ARGS...", "tether-pg adopt
// ARGS..."), so that their own start-up never pays for the driver's
// initialisation (TLS, x509, net). It links ledger's kong model too,
// which parses what its fast parse declines; ledger's --help, completion
// and usage errors are ledger's own, whatever the line. It is
// installed next to them; nobody needs to call it by hand, though it
// works the same when called.
//
//	tether-pg ledger --ledger postgres:///jobs?host=/run/postgresql run nightly -- ./nightly.sh
package tetherpg

import (
	"fmt"
	"os"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/cmd/adopt"
	"github.com/tether-sh/tether/lib/cmd/ledgercmd/ledgerkong"
	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/ledger/location"
	_ "github.com/tether-sh/tether/lib/ledger/pgstore" // registers the PostgreSQL store
)

// Main runs the tool args[0] names (ledger or adopt) with the rest of
// args, and returns its exit code.
func Main(args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "ledger":
			return ledgerkong.Main(args[1:])
		case "adopt":
			return adopt.Main(args[1:])
		case "--version":
			// Every installed binary answers --version and --help.
			return printed(fmt.Println(cli.VersionText(location.PostgresBinary)))
		case "--help", "-h":
			return printed(fmt.Print(help))
		}
	}
	fmt.Fprintf(os.Stderr, "%s: usage: %s ledger|adopt [ARGS...]\n", location.PostgresBinary, location.PostgresBinary)
	return exit.Usage
}

const help = `Usage: tether-pg ledger|adopt [ARGS...]

tether-pg serves PostgreSQL stores: it is ledger and adopt with the
database driver linked in. ledger and adopt run it themselves (one exec,
same PID) when their store is a postgres:// URL, before anything else;
nobody needs to call it by hand, though it works the same when called:

  tether-pg ledger --ledger 'postgres:///jobs?host=/run/postgresql' latest nightly

See ledger(1) and adopt(1).
`

// printed is the exit code of a --version or --help: 3 when it could not
// be written.
func printed(_ int, err error) int {
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: cannot write output: %v\n", location.PostgresBinary, err)
		return exit.System
	}
	return exit.OK
}
