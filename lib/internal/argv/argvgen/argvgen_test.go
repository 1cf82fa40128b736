package argvgen

import (
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"

	"github.com/tether-sh/tether/lib/cli"
)

type plain struct {
	Wait cli.Duration `default:"5s"`
	Run  struct {
		N int
	} `cmd:""`
}

type kongDefault struct {
	Run struct {
		N int
	} `cmd:""`
	Other struct {
		// kong's own mapper, with a default kong's Reset applies whatever
		// the command.
		Wait time.Duration `default:"5s"`
	} `cmd:""`
}

type kongEnv struct {
	At time.Duration `env:"AT"`
}

// TestWholeToolToKong: a value the tables leave out but kong applies
// unasked (a default, an environment variable) leaves every command line
// to kong, wherever it is in the grammar.
func TestWholeToolToKong(t *testing.T) {
	for _, tc := range []struct {
		name    string
		grammar any
		fast    bool
	}{
		{"plain", &plain{}, true},
		{"kong default", &kongDefault{}, false},
		{"kong env", &kongEnv{}, false},
	} {
		k, err := kong.New(tc.grammar)
		if err != nil {
			t.Fatal(err)
		}
		src, err := Generate(tc.name, k)
		if err != nil {
			t.Fatalf("Generate(%s) = %v", tc.name, err)
		}
		s := string(src)
		root := s[strings.LastIndex(s, "Fast: "):]
		if got := strings.HasPrefix(root, "Fast: true"); got != tc.fast {
			t.Errorf("Generate(%s): root %s; want Fast: %v", tc.name, strings.TrimSpace(root), tc.fast)
		}
	}
}
