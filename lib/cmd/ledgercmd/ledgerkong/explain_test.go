package ledgerkong_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tether-sh/tether/lib/cmd/ledgercmd"
	"github.com/tether-sh/tether/lib/cmd/ledgercmd/ledgerkong"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/location"
	"github.com/tether-sh/tether/lib/proc"
)

// stdout runs main with the process's stdout captured, and returns what
// it printed and its exit code.
func stdout(t *testing.T, main func([]string) int, args []string) (string, int) {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	saved := os.Stdout
	os.Stdout = f
	code := main(args)
	os.Stdout = saved
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(b), code
}

// TestCompleteMatchesKong: the ledger binary completes a command line
// (lib/cmd/ledgercmd, from the generated tables, without kong) with the
// very candidates kongplete gives from kong's model (ledgerkong): the
// same set, whatever the order, for subcommands, flags, enum values, job
// names and ids, and CMD after "--".
func TestCompleteMatchesKong(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	st, err := location.Open(dir, location.Options{})
	if err != nil {
		t.Fatal(err)
	}
	owner, err := ledger.LocalOwner(proc.Self())
	if err != nil {
		t.Fatal(err)
	}
	for _, job := range []string{"backup", "report", "bakery"} {
		if _, err := st.Claim(job, ledger.ClaimOptions{Owner: owner}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	path := t.TempDir()
	for _, exe := range []string{"backup.sh", "report.sh", "lsx"} {
		if err := os.WriteFile(filepath.Join(path, exe), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", path)
	t.Setenv("TETHER_LEDGER", dir)
	lines := []string{
		"ledger ", "ledger r", "ledger s", "ledger -", "ledger --", "ledger --l", "ledger --ledger ", "ledger --ledger=",
		"ledger --json ", "ledger --json s", "ledger --lock-timeout ", "ledger --lock-timeout 3s ", "ledger --lock-timeout 3s r",
		"ledger run ", "ledger run b", "ledger run ba", "ledger run -", "ledger run --", "ledger run --e", "ledger run --every ",
		"ledger run --every 1h ", "ledger run --every 1h b", "ledger run backup ", "ledger run backup -", "ledger run backup -- ",
		"ledger run backup -- b", "ledger run backup -- ./", "ledger run backup -- backup.sh ", "ledger spawn ", "ledger spawn --scope ",
		"ledger spawn --scope n", "ledger spawn --scope=", "ledger spawn x -- r", "ledger show ", "ledger show -", "ledger latest ",
		"ledger latest b", "ledger list ", "ledger list --", "ledger list --status ", "ledger list --status f", "ledger list --status=",
		"ledger list --status=fa", "ledger list --job ", "ledger list --job=b", "ledger finish ", "ledger finish x ",
		"ledger finish x --status ", "ledger finish x --status=c", "ledger status ", "ledger status backup ", "ledger status backup r",
		"ledger check ", "ledger check --max-age ", "ledger output ", "ledger adopt ", "ledger adopt --owner ", "ledger start ",
		"ledger fence ", "ledger beat ", "ledger recover --", "ledger prune -", "ledger metrics --", "ledger claim ", "ledger claim b",
		"ledger claim --exclusive ", "ledger claim --exclusive b", "ledger --ledger " + dir + " latest ", "ledger --ledger=" + dir + " show ",
		"ledger nosuch ", "ledger nosuch -", "ledger run backup x ", "ledger -h ", "ledger --help r", "ledger --version ",
	}
	// A few answers by heart: the two may not agree on nothing.
	for line, want := range map[string]string{"ledger run b": "bakery backup", "ledger list --status=f": "failed", "ledger spawn --scope ": "auto never require", "ledger run backup -- b": "backup.sh"} {
		t.Setenv("COMP_LINE", line)
		t.Setenv("COMP_POINT", "")
		if got, _ := stdout(t, ledgercmd.Main, []string{"ledger", "", "ledger"}); sorted(got) != want {
			t.Errorf("COMP_LINE=%q: ledger completes %q; want %q", line, sorted(got), want)
		}
	}
	for _, line := range lines {
		t.Setenv("COMP_LINE", line)
		t.Setenv("COMP_POINT", "")
		got, gotCode := stdout(t, ledgercmd.Main, []string{"ledger", "", "ledger"})
		want, wantCode := stdout(t, ledgerkong.Main, []string{"ledger", "", "ledger"})
		if g, w := sorted(got), sorted(want); g != w || gotCode != wantCode {
			t.Errorf("COMP_LINE=%q: ledger completes %q (exit %d); kong %q (exit %d)", line, g, gotCode, w, wantCode)
		}
	}
}

func sorted(s string) string {
	lines := strings.Fields(s)
	slices.Sort(lines)
	return strings.Join(lines, " ")
}

// TestHelpMatchesKong: the ledger binary's --help, of ledger and of
// every command however asked (--help, -h, before or after the command),
// is kong's.
func TestHelpMatchesKong(t *testing.T) {
	k, err := ledgerkong.Model()
	if err != nil {
		t.Fatal(err)
	}
	var lines [][]string
	lines = append(lines, []string{"--help"}, []string{"-h"}, []string{"--help", "-h"})
	for _, c := range k.Model.Children {
		lines = append(lines, []string{c.Name, "--help"}, []string{c.Name, "-h"}, []string{"--help", c.Name}, []string{"-h", c.Name, "--help"})
	}
	for _, args := range lines {
		got, gotCode := stdout(t, ledgercmd.Main, args)
		want, wantCode := stdout(t, ledgerkong.Main, args)
		if got != want || gotCode != wantCode {
			t.Errorf("ledger %s = %q, exit %d; kong prints %q, exit %d", strings.Join(args, " "), got, gotCode, want, wantCode)
		}
	}
}
