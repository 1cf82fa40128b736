package tether_test

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/tether-sh/tether/internal/pgtest"
	"github.com/tether-sh/tether/internal/testutil"
	"github.com/tether-sh/tether/lib"
	"github.com/tether-sh/tether/lib/cmd/ledgercmd"
	"github.com/tether-sh/tether/lib/scripttest"
)

func TestMain(m *testing.M) {
	testutil.DefaultSignals()
	// Under -race every process sleeps 1s at exit unless GORACE says
	// otherwise, and the scenarios start hundreds of short-lived tool
	// processes (copies of this binary): minutes of sleeping. testscript
	// passes GORACE on to them; it is read at start, so this binary itself
	// still sleeps once.
	if g := os.Getenv("GORACE"); !strings.Contains(g, "atexit_sleep_ms") {
		os.Setenv("GORACE", strings.TrimSpace(g+" atexit_sleep_ms=0"))
	}
	if v := os.Getenv("TETHER_TEST_NOW"); v != "" {
		// The scenarios' clock (DST, catch-up after downtime, simulated
		// ticks): ledger in this test binary starts at v and runs on
		// from it; no released binary reads the variable.
		at, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			fmt.Fprintf(os.Stderr, "TETHER_TEST_NOW=%q: %v\n", v, err)
			os.Exit(2)
		}
		start := time.Now()
		ledgercmd.SetTestClock(func() time.Time { return at.Add(time.Since(start)) })
	}
	cmds := lib.ScriptCommands()
	maps.Copy(cmds, scripttest.Programs())
	testscript.Main(stopPostgresAfter{m}, cmds)
}

// stopPostgresAfter stops the shared PostgreSQL server, if a test started
// it, once every test has run.
type stopPostgresAfter struct{ m *testing.M }

func (s stopPostgresAfter) Run() int {
	code := s.m.Run()
	if pg.srv != nil {
		pg.srv.Stop()
	}
	return code
}

// pg is the PostgreSQL server of this package's tests, started by the
// first that needs it (sharedPostgres), stopped after them all.
var pg struct {
	once sync.Once
	srv  *pgtest.Server
	err  error
}

// sharedPostgres returns the package's throwaway PostgreSQL server, and
// skips t (or fails it, when CI=true) when there is none.
func sharedPostgres(t *testing.T) *pgtest.Server {
	t.Helper()
	pg.once.Do(func() {
		pg.srv, pg.err = pgtest.StartMain()
	})
	if pg.err != nil {
		pgtest.Unavailable(t, pg.err)
	}
	return pg.srv
}

func TestScripts(t *testing.T) {
	t.Parallel()
	runScripts(t, "", nil)
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
	runScripts(t, "1", nil)
}

// TestScriptsPostgres runs the scenarios that touch the ledger again with
// the store on PostgreSQL: a throwaway server (internal/pgtest), and
// $TETHER_LEDGER the URL of a fresh database in each scenario. A scenario
// that inspects the file store's own files says `[pg] skip 'why'`.
// Without PostgreSQL's binaries it is skipped, or fails when CI=true.
func TestScriptsPostgres(t *testing.T) {
	t.Parallel()
	runScripts(t, "", sharedPostgres(t))
}

// runTool runs one of tether's tools as a scenario does (this test binary
// under the tool's name, see TestMain) in dir, with a private HOME, and
// returns its combined output and exit code.
func runTool(dir, tool string, args ...string) (string, int, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", 0, err
	}
	c := exec.Command(exe, args...)
	c.Args[0] = tool
	c.Dir = dir
	c.Env = append(os.Environ(), "HOME="+dir, "XDG_STATE_HOME="+dir+"/state", "TETHER_LEDGER=")
	out, err := c.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(out), exit.ExitCode(), nil
	}
	return string(out), 0, err
}

// ledgerLine matches a scenario line that runs ledger or adopt (directly,
// under exec or exitcode, or inside a shell command): such a scenario
// touches the ledger and runs in the PostgreSQL pass too.
var ledgerLine = regexp.MustCompile(`(?m)^[^#\n]*(^|[\s'"(;|&])(ledger|adopt)(\s|$)`)

// ledgerScripts lists the scenarios of dir that touch the ledger.
func ledgerScripts(t *testing.T, dir string) []string {
	t.Helper()
	all, err := filepath.Glob(filepath.Join(dir, "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range all {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if ledgerLine.Match(b) {
			files = append(files, f)
		}
	}
	return files
}

// runScripts runs the scenarios of testdata/scripts with
// TETHER_NO_SHORTCUTS set to noShortcuts in each one's environment; with a
// PostgreSQL server, only those that touch the ledger, each with a fresh
// database of it as its store.
func runScripts(t *testing.T, noShortcuts string, pgSrv *pgtest.Server) {
	const dir = "testdata/scripts"
	p := scenarioParams(noShortcuts, pgSrv)
	p.Dir = dir
	if pgSrv != nil {
		p.Dir, p.Files = "", ledgerScripts(t, dir)
	}
	testscript.Run(t, p)
}

// scenarioParams are the testscript parameters of every scenario: the
// custom commands, the conditions, and a private store (a fresh database
// of pgSrv when given).
func scenarioParams(noShortcuts string, pgSrv *pgtest.Server) testscript.Params {
	return testscript.Params{
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
			case "race":
				// Built with -race: its runtime maps terabytes of
				// shadow memory, which an address-space limit refuses.
				return raceEnabled, nil
			case "pg":
				// The PostgreSQL pass (TestScriptsPostgres).
				return pgSrv != nil, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Setup: func(env *testscript.Env) error {
			// Keep every tool's store and state inside the scenario.
			env.Setenv("HOME", env.WorkDir+"/home")
			env.Setenv("XDG_STATE_HOME", env.WorkDir+"/state")
			env.Setenv("TETHER_LEDGER", "")
			if pgSrv != nil {
				dsn, err := pgSrv.CreateDB()
				if err != nil {
					return err
				}
				env.Setenv("TETHER_LEDGER", dsn)
			}
			env.Setenv("TETHER_NO_SHORTCUTS", noShortcuts) // shortcut.Env, internal to lib
			return os.MkdirAll(env.WorkDir+"/home", 0o700)
		},
	}
}
