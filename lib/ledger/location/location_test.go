package location

import (
	"errors"
	"regexp"
	"slices"
	"strings"
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

// TestResolveHandedOff: a worker takes the flag, else the store its spawn
// handed over, else $TETHER_LEDGER.
func TestResolveHandedOff(t *testing.T) {
	for _, tc := range []struct{ flag, handed, env, want string }{
		{"/flag", "postgres:///handed", "/env", "/flag"},
		{"", "postgres:///handed", "/env", "postgres:///handed"},
		{"", "", "/env", "/env"},
	} {
		t.Setenv(HandoffEnvVar, tc.handed)
		t.Setenv(EnvVar, tc.env)
		if got, err := ResolveHandedOff(tc.flag); err != nil || got != tc.want {
			t.Errorf("ResolveHandedOff(%q) with $%s=%q, $%s=%q = %q, %v; want %q", tc.flag, HandoffEnvVar, tc.handed, EnvVar, tc.env, got, err, tc.want)
		}
	}
}

// TestHandMatchers holds isKeywordValue and scheme, written by hand so
// that opening a store compiles no regexp, to the expressions they stand
// for.
func TestHandMatchers(t *testing.T) {
	keyword := regexp.MustCompile(`^[\s\v]*[A-Za-z_]+[\s\v]*=`)
	schemeRE := regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
	for _, loc := range []string{
		"", "=", " =", "a=", " a =x", "\t\n_=", "host=/run/postgresql dbname=jobs", "a b=", "a1=", "1a=",
		"é=", "a\v=", "\vhost=h", "\v\vx\v=", "postgres://h/db", "postgresql:", "Postgres:/jobs", "mysql://db", "file:x",
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

// TestRedactKeywordValue: the value of a password keyword is hidden as
// the driver reads it, and nothing else is (but a quote never closed).
func TestRedactKeywordValue(t *testing.T) {
	for loc, want := range map[string]string{
		"host=/run/postgresql dbname=jobs password=s3cret connect_timeout=2": "host=/run/postgresql dbname=jobs password=xxxxx connect_timeout=2",
		"password=s3cret":             "password=xxxxx",
		"password = s3cret":           "password = xxxxx",
		"password=\ts3cret x=1":       "password=\txxxxx x=1",
		"password=":                   "password=",
		"password= x=1":               "password= xxxxx",
		"password='s3 cret' dbname=x": "password=xxxxx dbname=x",
		`password='s3\'cr et' x=1`:    "password=xxxxx x=1",
		`password='s3\\' x=1`:         "password=xxxxx x=1",
		"password='unclosed and more": "password=xxxxx",
		"password=a password=b":       "password=xxxxx password=xxxxx",
		"mypassword=x password=y":     "mypassword=x password=xxxxx",
		"x_password=z":                "x_password=z",
		"password1=z passwordx=y":     "password1=z passwordx=y",
		"PASSWORD=x":                  "PASSWORD=x",
		"dbname=password password=p":  "dbname=password password=xxxxx",
		"password":                    "password",
		"password=a'b c":              "password=xxxxx c",
		"password==x":                 "password=xxxxx",
		"a=1 password='' b=2":         "a=1 password=xxxxx b=2",
		"password=é":                  "password=xxxxx",
		"password\n=x":                "password\n=xxxxx",
		"host=h sslpassword=QQ1":      "host=h sslpassword=xxxxx",
		"host=h nosslpassword=QQ1":    "host=h nosslpassword=QQ1",
		// A backslash escapes in an unquoted value too, and \v is a space.
		`password=QQ1\ QQ2 x=1`: `password=xxxxx x=1`,
		`password=QQ1\`:         `password=xxxxx`,
		"password\v=QQ1 x=1":    "password\v=xxxxx x=1",
		"password=\vQQ1":        "password=\vxxxxx",
		"password=QQ1\vx=1":     "password=xxxxx\vx=1",
		// A value is read whole: "password=" inside another keyword's
		// value is that value, and a quote there opens nothing.
		"dbname=password=' password='QQ1 QQ2'": "dbname=password=' password=xxxxx",
		"dbname=a=b password=QQ1":              "dbname=a=b password=xxxxx",
		// A keyword the driver reads oddly, and libpq refuses, still hides.
		"a password=QQ1": "a password=xxxxx",
		"password x=1":   "password x=xxxxx",
		// A quote never closed may run over a password: hidden.
		"host='h password=QQ1": "host=xxxxx",
	} {
		if got, _ := redactKeywordValue(loc); got != want {
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
		{"postgres:///x?password=a&password=b#frag", "postgres:///x?password=xxxxx&password=xxxxx"},
		// A # does not end a query a lenient driver reads on; spaces
		// around a name are not part of it; sslpassword is a password.
		{"postgres:///x?application_name=a#b&password=QQ1", "postgres:///x?application_name=a#b&password=xxxxx"},
		{"postgres:///x? password=QQ1&password =QQ2&+password=QQ3", "postgres:///x? password=xxxxx&password =xxxxx&+password=xxxxx"},
		{"postgres:///x?sslpassword=QQ1", "postgres:///x?sslpassword=xxxxx"},
		{"host=h sslpassword=QQ1 sslmode=verify-full", "host=h sslpassword=xxxxx sslmode=verify-full"},
		{"host=h nosslpassword=QQ1", "host=h nosslpassword=QQ1"},
		// A password parameter begun inside what the user's password
		// hides runs on past the last @.
		{"postgres://u:QQ1?password=QQ2@127.0.0.1:1/db", "postgres://u:xxxxx@xxxxx"},
		{"postgres://u:QQ1?x@h/db?password=QQ2@QQ3&sslmode=disable", "postgres://u:xxxxx@xxxxx&sslmode=disable"},
		{"postgres:///x?pass%77ord=s3cret", "postgres:///x?pass%77ord=xxxxx"},
		{"postgres:///x?passwordx=1&xpassword=2", "postgres:///x?passwordx=1&xpassword=2"},
		{"postgres://u@db/x", "postgres://u@db/x"},
		{"postgres://u:s3:cr@et@db/x", "postgres://u:xxxxx@db/x"},
		{"postgres://u:s3cret@db/x%zz", "postgres://u:xxxxx@db/x%zz"},
		{"postgres://db/x@y:z", "postgres://db/x@y:z"},
		{"ftp://u:pw@host/x", "ftp://u:xxxxx@host/x"},
		{"u:pw@host://x", "…"},
		// A password with what ends an authority, unescaped: a lenient
		// driver connects with it as written.
		{"postgres://u:QQ1#QQ2@127.0.0.1:1/db", "postgres://u:xxxxx@127.0.0.1:1/db"},
		{"postgres://u:QQ1?QQ2@h/db", "postgres://u:xxxxx@h/db"},
		{"postgres://u:QQ1?QQ2@h/db?password=QQ3", "postgres://u:xxxxx@h/db?password=xxxxx"},
		{"postgres://h/db?password=QQ1@QQ2&x=1", "postgres://h/db?password=xxxxx&x=1"},
		{"postgres://u:QQ1/QQ2@h/db?password=z", "postgres://u:xxxxx@h/db?password=xxxxx"},
		{"ftp://u:pa#ss@h/x", "ftp://u:xxxxx@h/x"},
		// An @ in the query hides more than the password, never less.
		{"postgres://h:5432/db?application_name=a@b", "postgres://h:xxxxx@b"},
		{"host=h password=s3cret", "host=h password=xxxxx"},
		{"/var/lib/tether", "/var/lib/tether"},
	} {
		if got := Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

// TestRedactHidesPassword puts a password holding each character that
// ends a part of a URL or a keyword value into every form a location
// takes, and checks that no part of it shows.
func TestRedactHidesPassword(t *testing.T) {
	for _, c := range []string{"#", "?", "/", "@", ":", "&", "=", " ", "'", "%", "%40", "\\", "\t"} {
		secret := "QQ1" + c + "QQ2"
		forms := []string{
			"postgres://u:" + secret + "@h/db",
			"postgres://u:" + secret + "@h:5432/db?sslmode=disable#f",
			"postgresql://u:" + secret + "@/db?host=/run/postgresql",
			"ftp://u:" + secret + "@h/x",
			// libpq's keyword/value form, the value quoted as libpq reads it
			"host=h password='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(secret) + "' dbname=x",
			"host=h password=" + strings.NewReplacer(`\`, `\\`, " ", `\ `, "\t", "\\\t", "'", `\'`).Replace(secret) + " dbname=x",
		}
		if !strings.ContainsAny(c, "#&") {
			// (a query parameter ends at & or #, as in every URL parser)
			forms = append(forms, "postgres:///db?host=/tmp&password="+secret+"&sslmode=disable")
		}
		for _, loc := range forms {
			if got := Redact(loc); strings.Contains(got, "QQ") {
				t.Errorf("Redact(%q) = %q; shows the password", loc, got)
			}
		}
	}
}

// TestExists: a database is never looked for as a folder (adopt asks
// before it opens), in either of its forms.
func TestExists(t *testing.T) {
	for _, loc := range []string{"postgres://h/db", "postgresql:///db?host=/run/postgresql", "host=/run/postgresql password='a b' dbname=x", " dbname=x"} {
		if err := Exists(loc); err != nil {
			t.Errorf("Exists(%q) = %v; want nil", loc, err)
		}
	}
	if err := Exists(t.TempDir() + "/none"); err == nil {
		t.Errorf("Exists(a missing folder) = nil; want an error")
	}
}

// TestSecrets: the pieces a driver's message might quote of a password,
// longest first.
func TestSecrets(t *testing.T) {
	for _, tc := range []struct {
		loc  string
		want []string
	}{
		{"postgres://u:QQ1@QQ2@host/db", []string{"QQ1", "QQ2"}},
		{"host=h password='QQ1 QQ2' dbname=x", []string{"QQ1", "QQ2"}},
		{"postgres://u@h/db?password=s3cret&sslpassword=x", []string{"s3cret"}},
		{"/var/lib/tether", nil},
	} {
		if got := Secrets(tc.loc); !slices.Equal(got, tc.want) {
			t.Errorf("Secrets(%q) = %q; want %q", tc.loc, got, tc.want)
		}
	}
}
