package cli

import (
	"errors"
	"slices"
	"strings"
	"testing"
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

// TestCommandArgv: a runner's command is args' tail, byte for byte, without
// kong's leading "--"; what kong parsed is kept when it is not that tail.
func TestCommandArgv(t *testing.T) {
	tests := []struct {
		args, cmd, want []string
	}{
		{[]string{"--grace", "1s", "--", "true"}, []string{"--", "true"}, []string{"true"}},
		{[]string{"sh", "-c", "x"}, []string{"sh", "-c", "x"}, []string{"sh", "-c", "x"}},
		{[]string{"--", "printf", "a\xffb"}, []string{"--", "printf", "a\uFFFDb"}, []string{"printf", "a\xffb"}},
		{[]string{"/p\xff\xfe"}, []string{"/p\uFFFD\uFFFD"}, []string{"/p\xff\xfe"}},
		{nil, nil, nil},
		// Not the tail (a caller's own list): what was parsed.
		{[]string{"a", "b"}, []string{"c"}, []string{"c"}},
		{[]string{"x\xff"}, []string{"y\uFFFD"}, []string{"y\uFFFD"}},
		{[]string{"a"}, []string{"a", "b"}, []string{"a", "b"}},
	}
	for _, tt := range tests {
		if got := CommandArgv(tt.args, tt.cmd); !slices.Equal(got, tt.want) {
			t.Errorf("CommandArgv(%q, %q) = %q; want %q", tt.args, tt.cmd, got, tt.want)
		}
	}
}

// TestWarnf: every line of a diagnostic is the tool's, and no control
// character a message quotes reaches the terminal raw.
func TestWarnf(t *testing.T) {
	tests := []struct{ msg, want string }{
		{"plain", "t: plain\n"},
		{"trailing\n", "t: trailing\n"},
		{errors.Join(errors.New("one"), errors.New("two")).Error(), "t: one\nt: two\n"},
		{"label x\x1b[31m survived", "t: label x\\x1b[31m survived\n"},
		{"tab\there", "t: tab\\there\n"},
	}
	for _, tt := range tests {
		var b strings.Builder
		tool := &Tool{Name: "t", Stderr: &b}
		tool.Warnf("%s", tt.msg)
		if b.String() != tt.want {
			t.Errorf("Warnf(%q) wrote %q; want %q", tt.msg, b.String(), tt.want)
		}
	}
}
