package ledgerkong_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/tether-sh/tether/internal/testutil"
	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/cmd/ledgercmd/ledgerkong"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/location"
	"github.com/tether-sh/tether/lib/proc"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if dir, err := bins(); err == nil && dir != "" {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// bins builds ledger and tether-pg, once.
var bins = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "explain")
	if err != nil {
		return "", err
	}
	out, err := exec.Command("go", "build", "-o", dir+"/", "github.com/tether-sh/tether/cmd/ledger", "github.com/tether-sh/tether/cmd/tether-pg").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return dir, nil
})

// ledgerBin and kongBin are the ledger binary, and ledger as kong's
// model parses it (tether-pg ledger, which runs this package's Main).
func ledgerBin(t *testing.T) []string {
	dir, err := bins()
	if err != nil {
		t.Fatal(err)
	}
	return []string{filepath.Join(dir, "ledger")}
}

func kongBin(t *testing.T) []string {
	dir, err := bins()
	if err != nil {
		t.Fatal(err)
	}
	return []string{filepath.Join(dir, "tether-pg"), "ledger"}
}

// stdout runs bin with args and returns what it printed on stdout and its
// exit code; stderr must stay empty unless it failed.
func stdout(t *testing.T, bin, args []string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin[0], append(bin[1:], args...)...)
	var errs strings.Builder
	cmd.Stderr = &errs
	out, err := cmd.Output()
	code := testutil.ExitCode(t, err)
	if code == 0 && errs.Len() > 0 {
		t.Errorf("%s %q: stderr %q", bin, args, errs.String())
	}
	return string(out), code
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
	ledger, kong := ledgerBin(t), kongBin(t)
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
	for line, want := range map[string]string{"ledger run b": "backup bakery", "ledger list --status=f": "failed", "ledger spawn --scope ": "auto never require", "ledger run backup -- b": "backup.sh"} {
		t.Setenv("COMP_LINE", line)
		t.Setenv("COMP_POINT", "")
		if got, _ := stdout(t, ledger, []string{"ledger", "", "ledger"}); sorted(got) != want {
			t.Errorf("COMP_LINE=%q: ledger completes %q; want %q", line, sorted(got), want)
		}
	}
	for _, line := range lines {
		t.Setenv("COMP_LINE", line)
		t.Setenv("COMP_POINT", "")
		got, gotCode := stdout(t, ledger, []string{"ledger", "", "ledger"})
		want, wantCode := stdout(t, kong, []string{"ledger", "", "ledger"})
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
	ledger, kong := ledgerBin(t), kongBin(t)
	var lines [][]string
	lines = append(lines, []string{"--help"}, []string{"-h"}, []string{"--help", "-h"})
	for _, c := range k.Model.Children {
		lines = append(lines, []string{c.Name, "--help"}, []string{c.Name, "-h"}, []string{"--help", c.Name}, []string{"-h", c.Name, "--help"})
	}
	for _, args := range lines {
		got, gotCode := stdout(t, ledger, args)
		want, wantCode := stdout(t, kong, args)
		if got != want || gotCode != wantCode {
			t.Errorf("ledger %s = %q, exit %d; kong prints %q, exit %d", strings.Join(args, " "), got, gotCode, want, wantCode)
		}
	}
}

// TestUsageErrorsMatchKong: the usage errors the ledger binary words
// itself (an unknown flag, an unknown command: lib/cmd/ledgercmd's
// usage.go) read and exit as kong's (tether-pg ledger), word for word,
// over a corpus: every flag of every command mistyped (a letter dropped,
// two swapped) where that command takes it, every command mistyped, and
// the lines once left to tether-pg (kongLines). The ledger binary runs
// without tether-pg beside it or on PATH: it words every one itself.
func TestUsageErrorsMatchKong(t *testing.T) {
	kongCmd := kongBin(t)
	alone := filepath.Join(t.TempDir(), "ledger")
	if err := os.Link(ledgerBin(t)[0], alone); err != nil {
		t.Fatal(err)
	}
	k, err := ledgerkong.Model()
	if err != nil {
		t.Fatal(err)
	}
	typos := func(w string) []string {
		w = strings.TrimLeft(w, "-")
		out := []string{w[:len(w)-1]}
		if len(w) > 3 {
			out = append(out, w[:1]+w[2:3]+w[1:2]+w[3:])
		}
		return out
	}
	var lines [][]string
	for _, c := range k.Model.Children {
		for _, typo := range typos(c.Name) {
			if k.Model.Children[0].Name != typo {
				lines = append(lines, []string{typo}, []string{"--json", typo, "x"})
			}
		}
		for _, f := range append(append([]*kong.Flag(nil), c.Flags...), k.Model.Flags...) {
			for _, typo := range typos(f.Name) {
				lines = append(lines, []string{c.Name, "--" + typo}, []string{c.Name, "x", "--" + typo, "1"}, []string{"--" + typo, c.Name})
			}
		}
		lines = append(lines, []string{c.Name, "-q"}, []string{c.Name, "x", "y", "z"})
		for _, f := range c.Flags {
			if f.IsBool() {
				continue
			}
			lines = append(lines, []string{c.Name, "--" + f.Name}, []string{"--json", c.Name, "x", "--" + f.Name})
			if f.Short != 0 {
				lines = append(lines, []string{c.Name, "-" + string(f.Short)})
			}
		}
	}
	lines = append(lines, []string{"list", "-xy"}, []string{"finish", "x", "--status", "bad", "--b"}, []string{"claim", "j", "x"},
		[]string{"--lock-timeout", "3s", "stauts"}, []string{"run", "j", "--every", "1h", "--exclusve", "--", "true"})
	own := ownLines(k)
	t.Setenv("PATH", t.TempDir())
	t.Setenv("TETHER_LEDGER", filepath.Join(t.TempDir(), "store"))
	lines = append(lines, kongLines...)
	for i, args := range append(lines, own...) {
		want, wantCode := both(t, kongCmd, args)
		if wantCode == 0 && i >= len(lines) {
			continue // refused guessed wrong (list --job's type takes "x")
		}
		if wantCode == 0 && (slices.Contains(args, "report") || slices.Contains(args, "status")) {
			// No usage error, and an answer with a time in it (report's
			// page; status's AGO, a second later in the second run):
			// TestLedgerHelpFromSibling renders the page, the status
			// scenarios read the table.
			continue
		}
		got, gotCode := both(t, []string{alone}, args)
		if got != want || gotCode != wantCode {
			t.Errorf("ledger %q says %q, exit %d; kong says %q, exit %d", args, got, gotCode, want, wantCode)
		}
	}
}

// kongLines are command lines the ledger binary once left to kong's
// model in tether-pg: a path's "~", a cluster of short flags, a short
// flag's glued value, bytes that are not UTF-8, a command after "--",
// --help and --version given a value.
var kongLines = [][]string{
	{"prune", "-nq"}, {"prune", "-nh"}, {"prune", "-n5"}, {"metrics", "-ho"}, {"metrics", "-o~/x", "-q"},
	{"spawn", "j", "--log", "~/x.log", "--bogus", "--", "true"}, {"metrics", "-o", "-x"}, {"list", "-é"},
	{"claim", "\xff", "x"}, {"finish", "x", "--status", "\xff"}, {"list", "--\xff"}, {"\xff"},
	{"--", "list", "--json"}, {"--", "bogus"}, {"--help=false"}, {"--help=maybe"}, {"list", "--version=1"},
}

// ownLines are the lines ledger must word itself, every one: a value its
// flag's type or enum refuses, for every typed flag where each command
// takes it (given both ways, and after the command's arguments), a flag
// where a value was wanted (but a path's or a list's), and a missing
// argument or required flag, for every command.
func ownLines(k *kong.Kong) [][]string {
	var own [][]string
	for _, c := range k.Model.Children {
		var required, firsts []string
		for _, f := range c.Flags {
			if f.Required {
				v := "1h"
				if f.Enum != "" {
					v = f.EnumSlice()[0]
				}
				required = append(required, "--"+f.Name, v)
			}
		}
		for _, p := range c.Positional {
			if p.Required {
				firsts = append(firsts, "x")
			}
		}
		if len(required) > 0 {
			own = append(own, []string{c.Name})
		}
		if len(firsts) > 0 {
			own = append(own, append([]string{c.Name}, required...))
		}
		if len(firsts) > 1 {
			own = append(own, append(append([]string{c.Name}, required...), firsts[:len(firsts)-1]...))
		}
		for _, f := range append(append([]*kong.Flag(nil), c.Flags...), k.Model.Flags...) {
			if f.Name == "help" || f.Name == "version" {
				continue
			}
			if !f.IsBool() && f.Tag.Type == "" && f.Target.Kind() != reflect.Slice {
				// A flag where its value was wanted.
				for _, next := range []string{"-x", "--json", "-5", "--"} {
					own = append(own, []string{c.Name, "--" + f.Name, next, "x"})
				}
			}
			for _, bad := range refused(f) {
				own = append(own, []string{c.Name, "--" + f.Name + "=" + bad})
				if !f.IsBool() {
					own = append(own, append(append(append([]string{c.Name}, required...), firsts...), "--"+f.Name, bad))
				}
				if f.Short != 0 && !f.IsBool() {
					own = append(own, []string{c.Name, "-" + string(f.Short), bad})
				}
			}
		}
	}
	return own
}

// refused are values kong refuses for f: what its type cannot read, one
// outside its enum; none for a string flag, which takes any.
func refused(f *kong.Flag) []string {
	t := f.Target.Type()
	switch {
	case f.Enum != "":
		return []string{"nosuch"}
	case f.IsBool():
		return []string{"maybe"}
	case t.Kind() == reflect.String, t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		return nil
	case t == reflect.TypeFor[cli.Location]():
		return []string{""}
	}
	return []string{"x", "1x"}
}

// both runs bin with args and returns its stdout and stderr, and its exit code.
func both(t *testing.T, bin, args []string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin[0], append(bin[1:], args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), testutil.ExitCode(t, err)
}

// TestLedgerExplainsItself: the ledger binary never execs tether-pg to
// parse a command line or explain itself, with the shortcuts on or off
// (TETHER_NO_SHORTCUTS leaves the ledger binary's parser on: it has no
// other): a tether-pg stand-in beside it, which records being called,
// never is, for --help and --version however asked, the usage errors of
// ownLines, and command lines that parse.
func TestLedgerExplainsItself(t *testing.T) {
	k, err := ledgerkong.Model()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ledger := filepath.Join(dir, "ledger")
	if err := os.Link(ledgerBin(t)[0], ledger); err != nil {
		t.Fatal(err)
	}
	called := filepath.Join(dir, "called")
	standIn := "#!/bin/sh\necho \"$@\" >>" + called + "\necho tether-pg stand-in >&2\nexit 99\n"
	if err := os.WriteFile(filepath.Join(dir, location.PostgresBinary), []byte(standIn), 0o755); err != nil {
		t.Fatal(err)
	}
	trueBin, err := exec.LookPath("true")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir())
	t.Setenv("TETHER_LEDGER", filepath.Join(t.TempDir(), "store"))
	lines := [][]string{{"--help"}, {"-h"}, {"--version"}, {"--version", "list"}, {"list", "--version"}, {"--help", "--version"}}
	for _, c := range k.Model.Children {
		lines = append(lines, []string{c.Name, "--help"}, []string{"-h", c.Name}, []string{c.Name, "x", "--help", "--", "true"})
	}
	good := [][]string{{"claim", "j"}, {"list"}, {"--json", "status"}, {"check", "j", "--max-age", "1h"}, {"run", "j", "--", trueBin},
		// once parsed by kong in tether-pg
		{"prune", "-nn", "--all"}, {"--", "list"}, {"claim", "j", "--source", "s\xff"}, {"run", "j", trueBin, "\xff"}}
	lines = append(lines, kongLines...)
	for _, env := range []string{"", "1", "fast-parse"} {
		t.Setenv("TETHER_NO_SHORTCUTS", env)
		for _, args := range good {
			if out, code := both(t, []string{ledger}, args); code != 0 && !(args[0] == "check" && code == 2) {
				t.Errorf("TETHER_NO_SHORTCUTS=%s ledger %q: exit %d, %q; want it run", env, args, code, out)
			}
		}
		for _, args := range append(lines, ownLines(k)...) {
			if out, _ := both(t, []string{ledger}, args); strings.Contains(out, "stand-in") {
				t.Errorf("TETHER_NO_SHORTCUTS=%s ledger %q execs tether-pg", env, args)
			}
		}
	}
	if b, err := os.ReadFile(called); err == nil {
		t.Errorf("tether-pg was called with: %s", b)
	}
}

// TestLedgerAnswerLost: --help and --version that the ledger binary
// answers itself, anywhere on a line, exit 3 with one line when the
// answer cannot be written (CONTRACT.md §1.2), as every other output.
func TestLedgerAnswerLost(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer full.Close()
	for _, args := range [][]string{{"list", "--version"}, {"list", "--help"}, {"--help"}} {
		cmd := exec.Command(ledgerBin(t)[0], args...)
		cmd.Stdout = full
		var errs strings.Builder
		cmd.Stderr = &errs
		code := testutil.ExitCode(t, cmd.Run())
		if code != 3 || strings.Count(errs.String(), "\n") != 1 || !strings.HasPrefix(errs.String(), "ledger: ") {
			t.Errorf("ledger %q >/dev/full = exit %d, stderr %q; want 3 and one line", args, code, errs.String())
		}
	}
}
