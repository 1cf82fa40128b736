package location

import (
	"errors"
	"testing"

	"github.com/tether-sh/tether/lib/ledger"
)

func TestDefault(t *testing.T) {
	for _, tc := range []struct{ ledger, xdg, home, want string }{
		{"/l", "/x", "/h", "/l"},
		{"", "/x", "/h", "/x/tether/ledger"},
		{"", "", "/h", "/h/.local/state/tether/ledger"},
		{"", "relative", "/h", "/h/.local/state/tether/ledger"},
	} {
		t.Setenv(EnvVar, tc.ledger)
		t.Setenv("XDG_STATE_HOME", tc.xdg)
		t.Setenv("HOME", tc.home)
		if got, err := Default(); err != nil || got != tc.want {
			t.Errorf("Default(%+v) = %q, %v; want %q", tc, got, err, tc.want)
		}
	}
}

// TestResolve: the flag wins; without it, Default; with nothing to go
// by, bad input.
func TestResolve(t *testing.T) {
	t.Setenv(EnvVar, "postgres:///jobs")
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "")
	if got, err := Resolve("/flag"); err != nil || got != "/flag" {
		t.Errorf("Resolve(/flag) = %q, %v; want /flag", got, err)
	}
	if got, err := Resolve(""); err != nil || got != "postgres:///jobs" {
		t.Errorf("Resolve(\"\") = %q, %v; want $%s's", got, err, EnvVar)
	}
	t.Setenv(EnvVar, "")
	if got, err := Resolve(""); !errors.Is(err, ledger.ErrBadInput) {
		t.Errorf("Resolve(\"\") with nothing set = %q, %v; want ErrBadInput", got, err)
	}
}
