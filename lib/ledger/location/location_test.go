package location

import (
	"errors"
	"regexp"
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

// TestHandMatchers holds isKeywordValue and scheme, written by hand so
// that opening a store compiles no regexp, to the expressions they stand
// for.
func TestHandMatchers(t *testing.T) {
	keyword := regexp.MustCompile(`^\s*[A-Za-z_]+\s*=`)
	schemeRE := regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
	for _, loc := range []string{
		"", "=", " =", "a=", " a =x", "\t\n_=", "host=/run/postgresql dbname=jobs", "a b=", "a1=", "1a=",
		"é=", "a\v=", "postgres://h/db", "postgresql:", "Postgres:/jobs", "mysql://db", "file:x",
		"x+y.z-w:rest", "a", "a:", ":", "1:", "a_b:", "a/b:", "/var/lib/tether", "C:\\store", "a\u00a0=",
	} {
		if got, want := isKeywordValue(loc), keyword.MatchString(loc); got != want {
			t.Errorf("isKeywordValue(%q) = %v; want %v", loc, got, want)
		}
		if got, want := scheme(loc), schemeRE.FindString(loc); got != want {
			t.Errorf("scheme(%q) = %q; want %q", loc, got, want)
		}
	}
}
