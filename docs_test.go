package tether_test

import (
	"os"
	"regexp"
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
