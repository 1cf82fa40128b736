// Package lib exports every tether tool as a function, so that other
// projects' testscript suites can run ledger, adopt, watchpid, stopbounded
// and reap as script commands without installing them:
//
//	package mytool_test
//
//	import (
//		"testing"
//
//		"github.com/rogpeppe/go-internal/testscript"
//		"github.com/tether-sh/tether/lib"
//	)
//
//	func TestMain(m *testing.M) { testscript.Main(m, lib.ScriptCommands()) }
//
//	func TestScripts(t *testing.T) {
//		testscript.Run(t, testscript.Params{Dir: "testdata/scripts"})
//	}
//
// No Setup is needed: testscript sets HOME=/no-home, and a script that
// names no store (no $TETHER_LEDGER, no $XDG_STATE_HOME, no HOME inside
// $WORK, or a --ledger flag, which wins anyway) gets a private one at
// $WORK/.tether/ledger, gone with the script. Without it the default store
// would be /no-home/.local/state/tether/ledger: created on the host as
// root and shared by every script and run, refused as a normal user.
// testscript.RunMain takes ScriptMainCommands instead.
//
// Each tool is also importable as lib/cmd/<tool>.Main (ledger as
// lib/cmd/ledgercmd/ledgerkong.Main, with kong's model linked;
// lib/cmd/ledgercmd.Main is the ledger binary's, which says its help and
// usage errors from tables generated from that model).
package lib

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/tether-sh/tether/lib/cmd/adopt"
	"github.com/tether-sh/tether/lib/cmd/ledgercmd/ledgerkong"
	"github.com/tether-sh/tether/lib/cmd/reap"
	"github.com/tether-sh/tether/lib/cmd/stopbounded"
	"github.com/tether-sh/tether/lib/cmd/watchpid"
	// The PostgreSQL store, in process: ledger and adopt here open
	// postgres:// locations themselves instead of handing off to tether-pg.
	_ "github.com/tether-sh/tether/lib/ledger/pgstore"
)

// Tools maps each tool's name to its Main: arguments without the program
// name in, exit code out.
var Tools = map[string]func(args []string) int{
	"ledger":      ledgerkong.Main,
	"adopt":       adopt.Main,
	"watchpid":    watchpid.Main,
	"stopbounded": stopbounded.Main,
	"reap":        reap.Main,
}

// ScriptCommands returns Tools in the form testscript.Main wants: each
// entry runs the tool on os.Args and exits the process with its code. A
// script that names no store gets a private one under $WORK.
func ScriptCommands() map[string]func() {
	m := make(map[string]func(), len(Tools))
	for name, run := range ScriptMainCommands() {
		m[name] = func() { os.Exit(run()) }
	}
	return m
}

// ScriptMainCommands is ScriptCommands in the form testscript.RunMain
// wants: each entry returns the exit code instead of exiting.
func ScriptMainCommands() map[string]func() int {
	m := make(map[string]func() int, len(Tools))
	for name, run := range Tools {
		m[name] = func() int {
			scriptStore(os.Getenv, os.Setenv)
			return run(os.Args[1:])
		}
	}
	return m
}

// scriptStore points $TETHER_LEDGER at $WORK/.tether/ledger when the
// process runs inside a testscript script ($WORK is set) that names no
// store. It goes in the environment, not in a flag, so that what the tool
// starts (spawn's worker, a nested ledger run in a payload) uses the same
// store.
func scriptStore(getenv func(string) string, setenv func(string, string) error) {
	work := getenv("WORK")
	if !filepath.IsAbs(work) || getenv("TETHER_LEDGER") != "" || filepath.IsAbs(getenv("XDG_STATE_HOME")) {
		return
	}
	if home := getenv("HOME"); home == work || strings.HasPrefix(home, work+"/") {
		return
	}
	setenv("TETHER_LEDGER", filepath.Join(work, ".tether", "ledger"))
}
