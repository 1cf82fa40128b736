package ledgercmd

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tether-sh/tether/lib/internal/shortcut"
)

// TestShortcutsSwitch runs a wrapper's cycle and the calls around it with
// TETHER_NO_SHORTCUTS unset, set to 1 and set to each accelerator's name.
// Unset, every accelerator of lib/internal/shortcut runs (so that the
// test sees each of them); set to 1, none does, whoever calls it; set to
// a name, all but that one do (so that each call site asks for its own);
// and every call exits as before.
func TestShortcutsSwitch(t *testing.T) {
	owner := strconv.Itoa(os.Getpid())
	envs := []string{"", "1"}
	for _, n := range shortcut.All() {
		envs = append(envs, n.String())
	}
	for _, env := range envs {
		t.Setenv(shortcut.Env, env)
		var before [8]int64
		for _, n := range shortcut.All() {
			before[n] = shortcut.Runs(n)
		}
		dir := filepath.Join(t.TempDir(), "st")
		must := func(args ...string) string {
			t.Helper()
			code, out, stderr := runMain(args...)
			if code != 0 {
				t.Fatalf("%s=%q: ledger %q = %d (%s); want 0", shortcut.Env, env, args, code, stderr)
			}
			return strings.TrimSpace(out)
		}
		id := must("--ledger", dir, "claim", "job", "--owner", owner)
		must("--ledger", dir, "start", id, "--owner", owner)
		must("--ledger", dir, "finish", id, "--status", "completed", "--exit-code", "0")
		if got := must("--ledger", dir, "show", id, "--field", "status"); got != "completed" {
			t.Errorf("%s=%q: show %s --field status = %q; want completed", shortcut.Env, env, id, got)
		}
		must("--ledger", dir, "list", "--json") // kong, not fast
		must("--ledger", dir, "--json", "list", "--job", "job")
		if got := must("--version"); !strings.HasPrefix(got, "ledger ") {
			t.Errorf("%s=%q: --version = %q; want \"ledger ...\"", shortcut.Env, env, got)
		}
		for _, n := range shortcut.All() {
			d := shortcut.Runs(n) - before[n]
			off := env == "1" || env == n.String()
			switch {
			case off && d != 0:
				t.Errorf("%s=%q: shortcut %v ran %d times; want 0", shortcut.Env, env, n, d)
			case !off && d == 0:
				t.Errorf("%s=%q: shortcut %v never ran; want it to (does its code still say shortcut.Ran?)", shortcut.Env, env, n)
			}
		}
	}
}
