package shortcut

import (
	"slices"
	"testing"
)

func TestTake(t *testing.T) {
	tests := []struct {
		env string
		off []Name // the accelerators the value turns off
	}{
		{"", nil},
		{"0", nil},
		{"1", All()},
		{"yes", All()},
		{",", All()},
		{"fast-parse", []Name{FastParse}},
		{"lone-version", []Name{LoneVersion}},
		{"canonical-codec", []Name{CanonicalCodec}},
		{"fast-parse,canonical-codec", []Name{FastParse, CanonicalCodec}},
		{" lone-version , fast-parse,", []Name{FastParse, LoneVersion}},
		{"stored-bytes", []Name{StoredBytes}},
		{"fast-parse,lone-version,canonical-codec,stored-bytes", All()},
		{"fast-parse,typo", All()},
		{"fast parse", All()},
		{"FAST-PARSE", All()},
	}
	for _, tt := range tests {
		t.Setenv(Env, tt.env)
		for _, n := range All() {
			want := !slices.Contains(tt.off, n)
			if got := Take(n); got != want {
				t.Errorf("%s=%q: Take(%v) = %v; want %v", Env, tt.env, n, got, want)
			}
		}
	}
}

func TestRan(t *testing.T) {
	for _, n := range All() {
		before := Runs(n)
		Ran(n)
		if d := Runs(n) - before; d != 1 {
			t.Errorf("Runs(%v) after Ran = +%d; want +1", n, d)
		}
	}
}

func TestNames(t *testing.T) {
	seen := map[string]bool{}
	for _, n := range All() {
		s := n.String()
		if s == "" || seen[s] || indexOf(s) != int(n) {
			t.Errorf("Name(%d).String() = %q; want a distinct name that names it", int(n), s)
		}
		seen[s] = true
	}
}
