package tetherpg

import "testing"

// TestVersionHelp: tether-pg answers --version and --help with 0, as every
// installed binary does; anything else but ledger or adopt is a usage error.
func TestVersionHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"--version"}, 0},
		{[]string{"--help"}, 0},
		{[]string{"-h"}, 0},
		{[]string{"--bogus"}, 2},
		{nil, 2},
	} {
		if got := Main(tc.args); got != tc.want {
			t.Errorf("Main(%q) = %d; want %d", tc.args, got, tc.want)
		}
	}
}
