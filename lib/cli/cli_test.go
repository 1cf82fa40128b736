package cli

import (
	"slices"
	"testing"

	"github.com/tether-sh/tether/lib/spec"
)

func TestSplitCommand(t *testing.T) {
	tests := []struct {
		in       []string
		own, cmd []string
		has      bool
	}{
		{[]string{"1", "2"}, []string{"1", "2"}, nil, false},
		{[]string{"1", "--", "sleep", "--", "x"}, []string{"1"}, []string{"sleep", "--", "x"}, true},
		{[]string{"--"}, []string{}, []string{}, true},
	}
	for _, tt := range tests {
		own, cmd, has := SplitCommand(tt.in)
		if !slices.Equal(own, tt.own) || !slices.Equal(cmd, tt.cmd) || has != tt.has {
			t.Errorf("SplitCommand(%q) = %q, %q, %v; want %q, %q, %v", tt.in, own, cmd, has, tt.own, tt.cmd, tt.has)
		}
	}
}

func TestParseExitCodes(t *testing.T) {
	type g struct {
		VersionFlag
		N int `arg:""`
	}
	tests := []struct {
		args []string
		code int
		done bool
	}{
		{[]string{"--version"}, 0, true},
		{[]string{"--help"}, 0, true},
		{[]string{"--bogus"}, spec.ExitUsage, true},
		{[]string{"notanumber"}, spec.ExitUsage, true},
		{[]string{}, spec.ExitUsage, true},
		{[]string{"3"}, 0, false},
	}
	for _, tt := range tests {
		var out, errOut stringsBuilder
		tool := &Tool{Name: "t", Stdout: &out, Stderr: &errOut}
		var v g
		_, code, done := tool.Parse(&v, tt.args)
		if code != tt.code || done != tt.done {
			t.Errorf("Parse(%q) = %d, %v; want %d, %v (stderr %q)", tt.args, code, done, tt.code, tt.done, errOut.String())
		}
		if tt.code == spec.ExitUsage && len(errOut.String()) < 4 || tt.code == spec.ExitUsage && errOut.String()[:3] != "t: " {
			t.Errorf("Parse(%q) stderr = %q; want a line starting \"t: \"", tt.args, errOut.String())
		}
	}
}

type stringsBuilder struct{ b []byte }

func (s *stringsBuilder) Write(p []byte) (int, error) { s.b = append(s.b, p...); return len(p), nil }
func (s *stringsBuilder) String() string              { return string(s.b) }
