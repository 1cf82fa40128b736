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

	"github.com/tether-sh/tether/internal/pgtest"
	"github.com/tether-sh/tether/internal/testutil"
)

// TestPostgresExecSibling: the installed ledger and adopt do not link the
// PostgreSQL driver; given a postgres:// store they become tether-pg,
// found next to them, running the same command (a spawn's worker too)
// whatever they are called (tether-ledger, a symlink, exec -a adopt), and
// keeping a parent-death signal their caller set; without tether-pg they
// say so in one line with exit 3 (125 for run: CMD did not run).
func TestPostgresExecSibling(t *testing.T) {
	srv := pgtest.Start(t)
	url := srv.NewDB(t)
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/", "./cmd/ledger", "./cmd/adopt", "./cmd/tether-pg")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ledger := func(args ...string) (string, int) {
		cmd := exec.Command(filepath.Join(bin, "ledger"), append([]string{"--ledger", url}, args...)...)
		cmd.Env = append(os.Environ(), "TETHER_LEDGER=")
		out, err := cmd.CombinedOutput()
		return string(out), testutil.ExitCode(t, err)
	}

	if out, code := ledger("run", "hop", "--", "sh", "-c", `echo "id=$TETHER_EXECUTION"`); code != 0 || !strings.HasPrefix(out, "id=") {
		t.Fatalf("ledger run through tether-pg = %q, exit %d; want id=…, 0", out, code)
	}
	if out, code := ledger("latest", "hop", "--field", "status"); code != 0 || out != "completed\n" {
		t.Errorf("ledger latest = %q, exit %d; want completed, 0", out, code)
	}
	// The hand-off keeps the signals the caller ignored (USR1, bit 9) for
	// the payload: exec keeps only what is ignored at the time, and the Go
	// runtime of ledger had replaced them by its handlers.
	trapped := exec.Command("sh", "-c", `trap '' USR1; exec "$@"`, "sh", filepath.Join(bin, "ledger"), "--ledger", url,
		"run", "hopsig", "--", "sh", "-c", "grep '^SigIgn:' /proc/self/status")
	if out, err := trapped.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "SigIgn:\t0000000000000200" {
		t.Errorf("trap '' USR1; ledger run through tether-pg: %q, %v; want SigIgn:\t0000000000000200", out, err)
	}
	// spawn's worker is adopt, which hands off too; the store it was
	// handed (with its password) stays out of the payload's environment
	if out, code := ledger("spawn", "--scope", "never", "--wait", "hopspawn", "--", "sh", "-c", `test -z "$TETHER_HANDOFF_LEDGER$TETHER_LEDGER" && exit 4`); code != 4 {
		t.Errorf("ledger spawn --wait through tether-pg = %q, exit %d; want 4", out, code)
	}
	if out, code := ledger("latest", "hopspawn", "--field", "exit_code"); code != 0 || out != "4\n" {
		t.Errorf("ledger latest hopspawn = %q, exit %d; want 4, 0", out, code)
	}

	// Another name, a symlink, another argv[0]: the tool handed off is
	// ledger all the same.
	renamed := filepath.Join(bin, "tether-ledger")
	if err := os.Link(filepath.Join(bin, "ledger"), renamed); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "l")
	if err := os.Symlink(renamed, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*exec.Cmd{
		exec.Command(renamed, "--ledger", url, "latest", "hop", "--field", "status"),
		exec.Command(link, "--ledger", url, "latest", "hop", "--field", "status"),
		{Path: renamed, Args: []string{"adopt", "--ledger", url, "latest", "hop", "--field", "status"}},
	} {
		if out, err := c.CombinedOutput(); err != nil || string(out) != "completed\n" {
			t.Errorf("%s (argv[0] %s) latest hop = %q, %v; want completed", c.Path, c.Args[0], out, err)
		}
	}

	// setpriv --pdeathsig KILL: the ledger, become tether-pg, dies with
	// the caller that set it, as on a file store.
	if _, err := exec.LookPath("setpriv"); err == nil {
		dir := t.TempDir()
		parent := exec.Command("sh", "-c", `setpriv --pdeathsig KILL "$0" --ledger "$1" run pdeath -- sh -c 'echo started >"$1"; exec sleep 60' sh "$2" & echo $! >"$3"; wait`,
			renamed, url, filepath.Join(dir, "started"), filepath.Join(dir, "pid"))
		var said bytes.Buffer
		parent.Stdout, parent.Stderr = &said, &said
		if err := parent.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("the setpriv line said: %s", said.String())
			}
		})
		testutil.WaitFile(t, filepath.Join(dir, "started"), 20*time.Second)
		pid := strings.TrimSpace(string(must(os.ReadFile(filepath.Join(dir, "pid")))))
		if cmdline, _ := os.ReadFile("/proc/" + pid + "/cmdline"); !strings.HasPrefix(string(cmdline), filepath.Join(bin, "tether-pg")+"\x00ledger\x00") {
			t.Errorf("the ledger's command line is %q; want tether-pg ledger …", cmdline)
		}
		parent.Process.Kill()
		parent.Wait()
		deadline := time.Now().Add(20 * time.Second)
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("tether-pg (pid %s) outlived its parent by 20s: the parent-death signal was lost in the hand-off", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	if err := os.Remove(filepath.Join(bin, "tether-pg")); err != nil {
		t.Fatal(err)
	}
	out, code := ledger("latest", "hop")
	if code != 3 || strings.Count(out, "\n") != 1 || !strings.Contains(out, "served by tether-pg") {
		t.Errorf("ledger without tether-pg = %q, exit %d; want one line naming it, 3", out, code)
	}
	out, code = ledger("run", "hop", "--", "true")
	if code != 125 || strings.Count(out, "\n") != 1 || !strings.Contains(out, "served by tether-pg") {
		t.Errorf("ledger run without tether-pg = %q, exit %d; want one line naming it, 125", out, code)
	}
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid string) bool {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
