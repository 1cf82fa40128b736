package shortcut

import "testing"

func TestTake(t *testing.T) {
	tests := []struct {
		env  string
		want bool
	}{
		{"", true},
		{"0", true},
		{"1", false},
		{"yes", false},
	}
	for _, tt := range tests {
		t.Setenv(Env, tt.env)
		for _, n := range All() {
			if got := Take(n); got != tt.want {
				t.Errorf("%s=%q: Take(%v) = %v; want %v", Env, tt.env, n, got, tt.want)
			}
			before := Runs(n)
			Ran(n)
			if d := Runs(n) - before; d != 1 {
				t.Errorf("Runs(%v) after Ran = +%d; want +1", n, d)
			}
		}
	}
}

func TestNames(t *testing.T) {
	seen := map[string]bool{}
	for _, n := range All() {
		s := n.String()
		if s == "" || seen[s] {
			t.Errorf("Name(%d).String() = %q; want a distinct name", int(n), s)
		}
		seen[s] = true
	}
}
