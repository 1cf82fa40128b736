package tether_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestGoVersionStated checks that the minimum Go version is the same in
// go.mod (what the toolchain enforces, and what a module importing tether
// inherits), the README and install.sh.
func TestGoVersionStated(t *testing.T) {
	mod := mustRead(t, "go.mod")
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindStringSubmatch(mod)
	if m == nil {
		t.Fatalf("go.mod: no go line")
	}
	want := "Go " + m[1] + " or newer"
	for _, f := range []string{"README.md", "install.sh"} {
		if s := mustRead(t, f); !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(s) {
			t.Errorf("%s does not say %q (go.mod: go %s)", f, want, m[1])
		}
		if old := regexp.MustCompile(`Go (≥ )?1\.\d+(\.\d+)?`).FindAllString(mustRead(t, f), -1); len(old) != 1 {
			t.Errorf("%s names Go versions %q; want only %q", f, old, want)
		}
	}
}

func mustRead(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCrontabLines checks every crontab line in the README and the tools'
// help: cron runs it with PATH=/usr/bin:/bin, where tether is not (and
// Debian's accounting ledger may be), so its command is an absolute path
// or its crontab sets PATH. .ci/cron runs the README's lines under cron.
func TestCrontabLines(t *testing.T) {
	files, err := filepath.Glob("lib/cmd/*/*.go")
	if err != nil {
		t.Fatal(err)
	}
	cronLine := regexp.MustCompile(`^\s*(?://\s*)?((?:[*0-9/,-]+\s+){5})(\S+)`)
	found := 0
	for _, f := range append(files, "README.md") {
		pathSet := false
		for i, line := range strings.Split(mustRead(t, f), "\n") {
			if text := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "//")); strings.HasPrefix(text, "PATH=/") {
				pathSet = true
			}
			m := cronLine.FindStringSubmatch(line)
			if m == nil || strings.HasSuffix(f, "_test.go") {
				continue
			}
			found++
			if !strings.HasPrefix(m[2], "/") && !pathSet {
				t.Errorf("%s:%d: crontab line runs %q by name with no PATH= line before it; cron's PATH is /usr/bin:/bin", f, i+1, m[2])
			}
		}
	}
	if found < 2 {
		t.Errorf("found %d crontab lines; want the README's and reap --help's at least", found)
	}
}
