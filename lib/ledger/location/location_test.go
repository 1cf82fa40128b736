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

// TestRedactKeywordValue holds redactKeywordValue, written by hand, to
// the expression it stands for, on the shapes a password takes in libpq's
// keyword/value form.
func TestRedactKeywordValue(t *testing.T) {
	passwordValue := regexp.MustCompile(`(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s']\S*|'.*$)`)
	for _, loc := range []string{
		"host=/run/postgresql dbname=jobs password=s3cret connect_timeout=2",
		"password=s3cret", "password = s3cret", "password=\ts3cret x=1", "password=", "password= x=1",
		"password='s3 cret' dbname=x", `password='s3\'cr et' x=1`, `password='s3\\' x=1`, "password='unclosed and more",
		"password=a password=b", "mypassword=x password=y", "x_password=z", "password1=z", "passwordx=y",
		"dbname=password password=p", "password", "password x=1", "PASSWORD=x", "password=a'b c",
		"password==x", "a=1 password='' b=2", "password=é", "password\n=x",
	} {
		if got, want := redactKeywordValue(loc), passwordValue.ReplaceAllString(loc, "${1}xxxxx"); got != want {
			t.Errorf("redactKeywordValue(%q) = %q; want %q", loc, got, want)
		}
	}
}

// TestRedact: a password in a location never shows in a message.
func TestRedact(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://u:s3cret@db/x", "postgres://u:xxxxx@db/x"},
		{"postgresql://u:s3cret@db:5432/x?sslmode=require", "postgresql://u:xxxxx@db:5432/x?sslmode=require"},
		{"postgres:///x?host=/run/postgresql&password=s3cret", "postgres:///x?host=/run/postgresql&password=xxxxx"},
		{"postgres:///x?password=a&password=b#frag", "postgres:///x?password=xxxxx&password=xxxxx#frag"},
		{"postgres:///x?pass%77ord=s3cret", "postgres:///x?pass%77ord=xxxxx"},
		{"postgres:///x?passwordx=1&xpassword=2", "postgres:///x?passwordx=1&xpassword=2"},
		{"postgres://u@db/x", "postgres://u@db/x"},
		{"postgres://u:s3:cr@et@db/x", "postgres://u:xxxxx@db/x"},
		{"postgres://u:s3cret@db/x%zz", "postgres://u:xxxxx@db/x%zz"},
		{"postgres://db/x@y:z", "postgres://db/x@y:z"},
		{"ftp://u:pw@host/x", "ftp://u:xxxxx@host/x"},
		{"u:pw@host://x", "…"},
		{"host=h password=s3cret", "host=h password=xxxxx"},
		{"/var/lib/tether", "/var/lib/tether"},
	} {
		if got := Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}
