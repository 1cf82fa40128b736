//go:build linux

package runner_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/proc"
	"github.com/tether-sh/tether/lib/runner"
)

// setPath sets PATH for the test, or unsets it when unset; the cleanup
// restores it.
func setPath(t *testing.T, path string, unset bool) {
	t.Helper()
	t.Setenv("PATH", path)
	if unset {
		os.Unsetenv("PATH")
	}
}

// TestRunSearchPath: a name without a slash is found as execvp(3) finds
// it: with PATH unset (cron's env -i) in confstr(_CS_PATH), /bin:/usr/bin;
// with PATH empty in the current directory only, which the runner refuses
// as it refuses a PATH entry "." (126); held or not.
func TestRunSearchPath(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tether-here"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	tests := []struct {
		name  string
		path  string
		unset bool
		argv  []string
		code  int
	}{
		{"unset", "", true, []string{"true"}, 0},
		{"unset status", "", true, []string{"sh", "-c", "exit 3"}, 3},
		{"unset not found", "", true, []string{"tether-no-such-command"}, exit.NotFound},
		{"unset not in cwd", "", true, []string{"tether-here"}, exit.NotFound},
		{"empty", "", false, []string{"true"}, exit.NotFound},
		{"empty cwd", "", false, []string{"tether-here"}, exit.NoExec},
		{"set", "/nonexistent", false, []string{"true"}, exit.NotFound},
	}
	for _, hold := range append([]string{"unheld"}, holdNames()...) {
		for _, tt := range tests {
			t.Run(hold+"/"+tt.name, func(t *testing.T) {
				restore := setHold(hold)
				defer restore()
				setPath(t, tt.path, tt.unset)
				o := runner.Options{Argv: tt.argv}
				if hold != "unheld" {
					o.OnStart = func(proc.ID) error { return nil }
				}
				res, err := runner.Run(context.Background(), o)
				if got := codeOf(res, err); got != tt.code {
					t.Errorf("Run(%q) with PATH %s = %v (code %d); want code %d", tt.argv, describePath(tt.path, tt.unset), err, got, tt.code)
				}
				noChildren(t)
			})
		}
	}
}

// TestRunPathUnsetEnviron: the command found through the default search
// path gets the runner's environment as it is: no PATH added.
func TestRunPathUnsetEnviron(t *testing.T) {
	env, err := exec.LookPath("env")
	if err != nil {
		t.Skip("no env(1)")
	}
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	setPath(t, "", true)
	res, err := runner.Run(context.Background(), runner.Options{Argv: []string{filepath.Base(env)}, Stdout: out})
	if got := codeOf(res, err); got != 0 {
		t.Fatalf("Run(env) with PATH unset = %v (code %d); want code 0", err, got)
	}
	b, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "PATH=") {
			t.Errorf("Run(env) with PATH unset: the command's environment holds %q; want no PATH", line)
		}
	}
}

func codeOf(res runner.Result, err error) int {
	if err != nil {
		return exit.Code(err, -1)
	}
	return res.Code()
}

func describePath(path string, unset bool) string {
	if unset {
		return "unset"
	}
	return `"` + path + `"`
}

func holdNames() []string {
	var names []string
	for _, h := range runner.Holds {
		names = append(names, h.Name)
	}
	return names
}

func setHold(name string) (restore func()) {
	for _, h := range runner.Holds {
		if h.Name == name {
			return h.Set()
		}
	}
	return func() {}
}
