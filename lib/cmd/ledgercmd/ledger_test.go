package ledgercmd

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/tether-sh/tether/internal/testutil"
	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/cli/kongcli"
)

// With LEDGER_TEST_MAIN set the test binary is the ledger tool, so tests
// can race real processes without building anything.
const tool = testutil.Role("LEDGER_TEST_MAIN")

func TestMain(m *testing.M) {
	tool.Serve(func(_ string, args []string) int { return MainWith(args, explain) })
	os.Exit(m.Run())
}

// explain is ledgerkong.Explain without completion and the manual: kong's
// model of the grammar, in process (ledgerkong imports this package, so
// that its tests cannot be here).
func explain(t *cli.Tool, g any, args []string) (Runner, int, bool) {
	kt := &kongcli.Tool{Tool: t, RunsCommand: func(ctx *kong.Context, args []string) bool {
		return ctx != nil && RunsCommand(args)
	}}
	ctx, code, done := kt.Parse(g, args)
	if done {
		return nil, code, true
	}
	return ctx, 0, false
}

// ledgerProc returns a command running the ledger tool in a new process.
func ledgerProc(args ...string) *exec.Cmd {
	return tool.Command("ledger", args...)
}

// runMain runs Main in-process and returns its exit code and output.
func runMain(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	t := cli.New("ledger", nil)
	t.Stdout, t.Stderr = &out, &errb
	code = run(t, args, explain)
	return code, out.String(), errb.String()
}

func TestExitCodes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "st")
	code, id, stderr := runMain("--ledger", dir, "claim", "job")
	if code != 0 {
		t.Fatalf("claim = %d %s", code, stderr)
	}
	id = strings.TrimSpace(id)
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"adopt", id}, 1, "cannot adopt " + id + ": execution is claimed, not fenced"},
		{[]string{"show", "../../etc/passwd"}, 2, `malformed id "../../etc/passwd"`},
		{[]string{"show", "0abc"}, 1, "no such execution 0abc"},
		{[]string{"claim", "a/b"}, 2, "invalid job name"},
		{[]string{"claim", "j", "--instant", "tomorrow"}, 2, "invalid instant"},
		{[]string{"claim", "j", "--owner", "0"}, 2, "owner"},
		{[]string{"finish", id, "--status", "done"}, 2, "status"},
		{[]string{"finish", id, "--status", "completed"}, 1, "never started"},
		{[]string{"show", id, "--field", "nope"}, 2, "unknown field"},
		{[]string{"list", "--status", "nope"}, 2, "unknown status"},
		{[]string{"recover", "--grace", "soon"}, 2, "invalid duration"},
		{[]string{"bogus"}, 2, `unknown command "bogus"; the commands are claim, `},
		{[]string{}, 2, ""},
	} {
		code, _, stderr := runMain(append([]string{"--ledger", dir}, tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, tc.msg) {
			t.Errorf("ledger %v = %d %q; want %d %q", tc.args, code, stderr, tc.code, tc.msg)
		}
		if tc.code != 0 && strings.Count(stderr, "\n") > 1 && tc.msg != "" {
			t.Errorf("ledger %v printed %d lines on stderr; want one: %q", tc.args, strings.Count(stderr, "\n"), stderr)
		}
	}
	// --ledger and --json are global: accepted after the subcommand too.
	code, out, _ := runMain("show", id, "--json", "--ledger", dir)
	if code != 0 || !strings.HasPrefix(out, `{"id":"`+id+`"`) {
		t.Errorf("show ID --json --ledger DIR = %d %q", code, out)
	}
	code, out, _ = runMain("--ledger", dir, "latest", "job", "--field", "status")
	if code != 0 || out != "claimed\n" {
		t.Errorf("latest --field status = %d %q; want claimed", code, out)
	}
	os.Chmod(dir, 0o777)
	code, _, stderr = runMain("--ledger", dir, "list")
	if code != 3 || !strings.Contains(stderr, "writable by group or others") {
		t.Errorf("list on a 0777 store = %d %q; want 3", code, stderr)
	}
}

// TestRaceProcesses has 100 processes race for one adopt and 100 for one
// (job, instant) claim: exactly one of each wins, the rest exit 1.
func TestRaceProcesses(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "st")
	out, err := ledgerProc("--ledger", dir, "claim", "job").Output()
	if err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(string(out))
	if err := ledgerProc("--ledger", dir, "fence", id).Run(); err != nil {
		t.Fatal(err)
	}
	const n = 100
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := map[string]int{}
	// The test process stays alive, so it is every racer's owner.
	owner := []string{"--owner", strconv.Itoa(os.Getpid())}
	race := func(kind string, args ...string) {
		defer wg.Done()
		cmd := ledgerProc(append(append([]string{"--ledger", dir}, args...), owner...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case err == nil:
			mu.Lock()
			wins[kind]++
			mu.Unlock()
		case errors.As(err, &ee) && ee.ExitCode() == 1:
		default:
			t.Errorf("ledger %v = %v %s", args, err, stderr.String())
		}
	}
	for i := 0; i < n; i++ {
		wg.Add(2)
		go race("adopt", "adopt", id)
		go race("claim", "claim", "tick", "--instant", []string{"2024-05-01T10:00:00Z", "1714557600", "2024-05-01T12:00:00+02:00"}[i%3])
	}
	wg.Wait()
	if wins["adopt"] != 1 || wins["claim"] != 1 {
		t.Fatalf("winners = %v; want one adopt and one claim", wins)
	}
	out, err = ledgerProc("--ledger", dir, "list", "--job", "tick", "--field", "id").Output()
	if err != nil || strings.Count(string(out), "\n") != 1 {
		t.Fatalf("list --job tick = %q, %v; want one execution", out, err)
	}
}
