package ledgercmd

import "testing"

// TestUsageErrorLeavesToKong: usageError words only an unknown flag or
// command that kong's walk reaches with every argument before it taken;
// any line where kong could stop earlier, or at something else, is left
// to kong (TestUsageErrorsMatchKong, in ledgerkong, compares the words).
func TestUsageErrorLeavesToKong(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" when left to kong
	}{
		{[]string{"--bogus"}, "unknown flag --bogus"},
		{[]string{"list", "--jsonn"}, `unknown flag --jsonn, did you mean "--json"?`},
		{[]string{"claim", "j", "x"}, "unexpected argument x"},
		{[]string{"list", "-xy"}, `unknown flag -x, did you mean "-h"?`}, // kong reads the first letter
		// kong checks an enum after its walk: the unknown flag is its first error.
		{[]string{"finish", "x", "--status", "bad", "--b"}, `unknown flag --b, did you mean "-h"?`},
		{[]string{"claim"}, ""},                               // a missing argument: kong checks it after the walk
		{[]string{"run", "j", "--every", "x", "--bogus"}, ""}, // a refused value comes first
		{[]string{"run", "j", "--every", "--bogus"}, ""},      // a missing value comes first
		{[]string{"--ledger"}, "--ledger: missing its value"},
		{[]string{"metrics", "-o"}, "--output: missing its value"},
		{[]string{"list", "--json", "--field"}, "--field: missing its value"},
		{[]string{"run", "j", "true", "--bogus"}, ""}, // CMD's
		{[]string{"list", "--", "x"}, ""},             // after --
		{[]string{"--help", "--bogus"}, ""},           // kong's own flags
		{[]string{"--version", "--bogus"}, ""},
		{[]string{"run", "j", "--json=1", "--bogus"}, ""}, // a switch given a value
		{[]string{"-1"}, ""},                              // not a letter
		{[]string{"prune", "-ny"}, ""},                    // a cluster of known flags
	} {
		got, ok := usageError(tc.args)
		if ok != (tc.want != "") || got != tc.want {
			t.Errorf("usageError(%q) = %q, %v; want %q", tc.args, got, ok, tc.want)
		}
	}
}
