package tether_test

import (
	"fmt"
	"maps"
	"os"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/tether-sh/tether/lib"
	"github.com/tether-sh/tether/lib/scripttest"
)

func TestMain(m *testing.M) {
	// Under -race every process sleeps 1s at exit unless GORACE says
	// otherwise, and the scenarios start hundreds of short-lived tool
	// processes (copies of this binary): minutes of sleeping. testscript
	// passes GORACE on to them; it is read at start, so this binary itself
	// still sleeps once.
	if g := os.Getenv("GORACE"); !strings.Contains(g, "atexit_sleep_ms") {
		os.Setenv("GORACE", strings.TrimSpace(g+" atexit_sleep_ms=0"))
	}
	cmds := lib.ScriptCommands()
	maps.Copy(cmds, scripttest.Programs())
	testscript.Main(m, cmds)
}

func TestScripts(t *testing.T) {
	t.Parallel()
	runScripts(t, "")
}

// TestScriptsNoShortcuts runs every scenario again with every accelerator
// off (TETHER_NO_SHORTCUTS=1, see lib/internal/shortcut), so that each one
// proves the shortcuts change nothing. It runs when asked, as .ci/run
// does: TETHER_TEST_NO_SHORTCUTS=1 go test -run TestScriptsNoShortcuts .
func TestScriptsNoShortcuts(t *testing.T) {
	if os.Getenv("TETHER_TEST_NO_SHORTCUTS") != "1" {
		t.Skip("set TETHER_TEST_NO_SHORTCUTS=1 to run the scenarios without shortcuts")
	}
	t.Parallel()
	runScripts(t, "1")
}

// runScripts runs the scenarios of testdata/scripts with
// TETHER_NO_SHORTCUTS set to noShortcuts in each one's environment.
func runScripts(t *testing.T, noShortcuts string) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/scripts",
		Cmds:                scripttest.Cmds(),
		RequireExplicitExec: true,
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "root":
				return os.Geteuid() == 0, nil
			case "initpidns":
				// The initial PID namespace (PROC_PID_INIT_INO): where
				// every process of the machine is visible.
				ns, err := os.Readlink("/proc/self/ns/pid")
				return err == nil && ns == "pid:[4026531836]", nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Setup: func(env *testscript.Env) error {
			// Keep every tool's store and state inside the scenario.
			env.Setenv("HOME", env.WorkDir+"/home")
			env.Setenv("XDG_STATE_HOME", env.WorkDir+"/state")
			env.Setenv("TETHER_LEDGER", "")
			env.Setenv("TETHER_NO_SHORTCUTS", noShortcuts) // shortcut.Env, internal to lib
			return os.MkdirAll(env.WorkDir+"/home", 0o700)
		},
	})
}
