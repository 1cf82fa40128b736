//go:build linux

package tether_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLedgerHelpFromSibling: the ledger binary does not link kong, so that
// no verb pays for it at start-up; its help, a shell's completion and its
// usage errors are its own (generated from kong's model), byte for byte
// as tether-pg's kong model says them, with the same exit code, the lines
// it once handed to tether-pg to parse (-nq, -- list, ~/x, not UTF-8)
// included. Without tether-pg, help, completion and usage errors still
// work, and every command line runs: tether-pg is only ever execed for a
// PostgreSQL store.
func TestLedgerHelpFromSibling(t *testing.T) {
	deps, err := exec.Command("go", "list", "-deps", "./cmd/ledger").Output()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/ledger: %v", err)
	}
	for _, pkg := range []string{"github.com/alecthomas/kong", "github.com/willabides/kongplete", "github.com/posener/complete", "github.com/tether-sh/tether/lib/cli/kongcli", "github.com/tether-sh/tether/lib/internal/manual"} {
		if bytes.Contains(deps, []byte(pkg+"\n")) {
			t.Errorf("./cmd/ledger links %s; want it left to tether-pg", pkg)
		}
	}

	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/", "./cmd/ledger", "./cmd/tether-pg")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	store := filepath.Join(t.TempDir(), "st")
	type result struct {
		stdout, stderr string
		code           int
	}
	run := func(env []string, name string, args ...string) result {
		t.Helper()
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.Env = append(os.Environ(), append([]string{"TETHER_LEDGER=" + store}, env...)...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return result{stdout.String(), stderr.String(), code}
	}

	lines := []struct {
		env  []string
		args []string
		code int
	}{
		{nil, []string{"--help"}, 0},
		{nil, []string{"run", "--help"}, 0},
		{nil, []string{"--json", "--version"}, 0},
		{nil, []string{"--bogus"}, 2},
		{nil, []string{"claim"}, 2},
		{nil, []string{"frobnicate"}, 2},
		{nil, []string{"run", "j", "--dedline", "4m", "--", "true"}, 125},
		{nil, []string{"--lock-timeout", "x", "spawn", "j", "--", "true"}, 125},
		{nil, []string{"check", "j", "--max-agee", "1h"}, 3},
		{nil, []string{"prune", "-nq"}, 2},
		{nil, []string{"prune", "-nh"}, 0},
		{nil, []string{"--", "bogus"}, 2},
		{nil, []string{"--help=false", "list"}, 0},
		{nil, []string{"spawn", "j", "--log", "~/x", "--bogus", "--", "true"}, 125},
		{nil, []string{"check", "\xff", "--max-agee", "1h"}, 3},
		{[]string{"COMP_LINE=ledger li", "COMP_POINT=9"}, []string{}, 0},
		{[]string{"COMP_LINE=ledger list --st", "COMP_POINT=18"}, []string{}, 0},
	}
	for _, l := range lines {
		got := run(l.env, "ledger", l.args...)
		want := run(l.env, "tether-pg", append([]string{"ledger"}, l.args...)...)
		if got != want || got.code != l.code {
			t.Errorf("%s ledger %q = %+v;\ntether-pg ledger says %+v; want that, exit %d", l.env, l.args, got, want, l.code)
		}
		if l.env == nil && got.code != 0 && strings.Count(got.stderr, "\n") != 1 {
			t.Errorf("ledger %q: stderr %q; want one line", l.args, got.stderr)
		}
	}
	if got := run(nil, "ledger", "--help"); !strings.HasPrefix(got.stdout, "Usage: ledger ") {
		t.Errorf("ledger --help begins %q; want \"Usage: ledger \"", got.stdout[:min(len(got.stdout), 40)])
	}
	if got := run([]string{"COMP_LINE=ledger li", "COMP_POINT=9"}, "ledger"); got.stdout != "list\n" {
		t.Errorf("completing \"ledger li\" = %q; want list", got.stdout)
	}

	// A "tether-pg" that is ledger itself (a symlink, a copy) would be
	// handed the line again and again: the ledger it starts refuses, with
	// the code of tether-pg missing (3 for a database, 2 for a usage error).
	loop := t.TempDir()
	if err := os.Link(filepath.Join(bin, "ledger"), filepath.Join(loop, "ledger")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("ledger", filepath.Join(loop, "tether-pg")); err != nil {
		t.Fatal(err)
	}
	for _, l := range []struct {
		args []string
		code int
	}{{[]string{"--ledger", "postgres://u@127.0.0.1:1/db", "list"}, 3}, {[]string{"--ledger", "postgres://u@127.0.0.1:1/db", "run", "j", "--", "true"}, 125}} {
		args := l.args
		cmd := exec.Command(filepath.Join(loop, "ledger"), args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		done := make(chan error, 1)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if code := cmd.ProcessState.ExitCode(); err == nil || code != l.code || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), "handed a command line for tether-pg, which it is not") {
				t.Errorf("ledger %q with tether-pg a symlink to it: exit %d, stderr %q; want one line saying so, exit %d", args, code, stderr.String(), l.code)
			}
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("ledger %q with tether-pg a symlink to it still runs after 20s: it hands itself the line forever", args)
		}
	}

	if err := os.Remove(filepath.Join(bin, "tether-pg")); err != nil {
		t.Fatal(err)
	}
	// No tether-pg beside it, none on PATH: an unknown flag or command,
	// help and completion are ledger's own, whatever the line.
	noPath := []string{"PATH=" + t.TempDir()}
	for _, l := range []struct {
		args         []string
		code         int
		stdout, line string
	}{
		// bytes that are not UTF-8 read as kong reads them
		{[]string{"run", "\xff", "--", "true"}, 125, "", "ledger: invalid job name \"\uFFFD\": want 1-128 of [A-Za-z0-9._:@-], not . or ..\n"},
		{[]string{"check", "\xff", "--max-age", "1h"}, 3, "UNKNOWN: invalid job name \"\uFFFD\": want 1-128 of [A-Za-z0-9._:@-], not . or ..\n", ""},
		// a cluster of short flags, a path's ~, a command after --
		{[]string{"prune", "-nq"}, 2, "", "ledger: unknown flag -q, did you mean one of \"-h\", \"-n\"?\n"},
		{[]string{"spawn", "j", "--log", "~/x", "--bogus", "--", "true"}, 125, "", "ledger: unknown flag --bogus\n"},
		{[]string{"--", "list", "--bogus"}, 2, "", "ledger: unexpected argument --bogus\n"},
		{[]string{"run", "j", "--every", "x", "--", "true"}, 125, "", "ledger: --every: invalid duration \"x\"\n"},
		{[]string{"check", "j"}, 3, "UNKNOWN: bad usage of ledger check (see ledger check --help)\n", "ledger: missing flags: --max-age=D\n"},
		{[]string{"run", "j", "--dedline", "4m", "--", "true"}, 125, "", "ledger: unknown flag --dedline, did you mean \"--deadline\"?\n"},
		{[]string{"check", "j", "--max-agee", "1h"}, 3, "UNKNOWN: bad usage of ledger check (see ledger check --help)\n", "ledger: unknown flag --max-agee, did you mean \"--max-age\"?\n"},
		{[]string{"frobnicate"}, 2, "", "ledger: unknown command \"frobnicate\"; the commands are claim, fence, adopt, start, finish, beat, recover, show, latest, list, prune, run, spawn, output, status, check, metrics, verify\n"},
	} {
		if got := run(noPath, "ledger", l.args...); got != (result{l.stdout, l.line, l.code}) {
			t.Errorf("without tether-pg, ledger %q = %+v; want %q on stdout, %q, exit %d", l.args, got, l.stdout, l.line, l.code)
		}
	}
	if got := run(noPath, "ledger", "run", "--help"); got.code != 0 || !strings.HasPrefix(got.stdout, "Usage: ledger run ") || got.stderr != "" {
		t.Errorf("without tether-pg, ledger run --help = %+v; want its help, exit 0", got)
	}
	if got := run(append(noPath, "COMP_LINE=ledger li", "COMP_POINT=9"), "ledger", "ledger", "li", "ledger"); got != (result{stdout: "list\n"}) {
		t.Errorf("without tether-pg, completing = %+v; want list, exit 0, nothing on stderr", got)
	}
	// What the generated parser takes runs as ever.
	if got := run(noPath, "ledger", "--version"); got.code != 0 || !strings.HasPrefix(got.stdout, "ledger ") {
		t.Errorf("without tether-pg, ledger --version = %+v; want ledger …, 0", got)
	}
	if got := run(noPath, "ledger", "run", "j", "--", "/bin/sh", "-c", "echo ran"); got.code != 0 || got.stdout != "ran\n" {
		t.Errorf("without tether-pg, ledger run = %+v; want ran, 0", got)
	}
	// ... and so do the lines it once handed to tether-pg to parse; CMD's
	// arguments reach it byte for byte.
	if got := run(noPath, "ledger", "--", "run", "k", "/bin/sh", "-c", `printf %s "$1"`, "sh", "a\xffb"); got.code != 0 || got.stdout != "a\xffb" {
		t.Errorf("without tether-pg, ledger -- run k ... a\\xffb = %+v; want a\\xffb, 0", got)
	}
	if got := run(noPath, "ledger", "prune", "-nn", "--all"); got.code != 0 || got.stderr != "" {
		t.Errorf("without tether-pg, ledger prune -nn --all = %+v; want 0", got)
	}
	if got := run(noPath, "ledger", "--json", "--", "list"); got.code != 0 || strings.Count(got.stdout, "\n") != 2 {
		t.Errorf("without tether-pg, ledger --json -- list = %+v; want two records, 0", got)
	}
}
