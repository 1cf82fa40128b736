package cli

import (
	"errors"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestParseSignal(t *testing.T) {
	tests := []struct {
		in   string
		want unix.Signal
		err  bool
	}{
		{"TERM", unix.SIGTERM, false},
		{"SIGTERM", unix.SIGTERM, false},
		{"term", unix.SIGTERM, false},
		{"15", unix.SIGTERM, false},
		{"9", unix.SIGKILL, false},
		{"WINCH", unix.SIGWINCH, false},
		{"RTMIN", 34, false},
		{"RTMIN+2", 36, false},
		{"RTMAX-1", 63, false},
		{"0", 0, true},
		{"65", 0, true},
		{"-15", 0, true},
		{"FOO", 0, true},
		{"", 0, true},
		{"SIG", 0, true},
		{"RTMIN+99", 0, true},
		{"15x", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseSignal(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseSignal(%q) = %v, %v; want %v, err=%v", tt.in, got, err, tt.want, tt.err)
		}
		if err != nil && !errors.Is(err, ErrBadSignal) {
			t.Errorf("ParseSignal(%q) error %v does not wrap ErrBadSignal", tt.in, err)
		}
	}
}

func TestSignalName(t *testing.T) {
	if got := SignalName(unix.SIGTERM); got != "TERM" {
		t.Errorf("SignalName(SIGTERM) = %q; want TERM", got)
	}
	if got := SignalName(40); got != "40" {
		t.Errorf("SignalName(40) = %q; want 40", got)
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{"5", 5 * time.Second, false},
		{"0.5", 500 * time.Millisecond, false},
		{"0", 0, false},
		{"250ms", 250 * time.Millisecond, false},
		{"2m", 2 * time.Minute, false},
		{"1h30m", 90 * time.Minute, false},
		{" 5 ", 5 * time.Second, false},
		{"-1", 0, true},
		{"-5s", 0, true},
		{"nope", 0, true},
		{"", 0, true},
		{"NaN", 0, true},
		{"Inf", 0, true},
		{"1e300", 0, true},
		{"999999999h", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, err=%v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

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

func TestCode(t *testing.T) {
	if got := Code(nil, 3); got != 0 {
		t.Errorf("Code(nil) = %d; want 0", got)
	}
	if got := Code(errors.New("x"), 3); got != 3 {
		t.Errorf("Code(plain) = %d; want fallback 3", got)
	}
	wrapped := Errorf(125, "outer: %w", Errorf(2, "inner"))
	if got := Code(wrapped, 3); got != 125 {
		t.Errorf("Code(wrapped) = %d; want 125", got)
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
		{[]string{"--bogus"}, ExitUsage, true},
		{[]string{"notanumber"}, ExitUsage, true},
		{[]string{}, ExitUsage, true},
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
		if tt.code == ExitUsage && len(errOut.String()) < 4 || tt.code == ExitUsage && errOut.String()[:3] != "t: " {
			t.Errorf("Parse(%q) stderr = %q; want a line starting \"t: \"", tt.args, errOut.String())
		}
	}
}

type stringsBuilder struct{ b []byte }

func (s *stringsBuilder) Write(p []byte) (int, error) { s.b = append(s.b, p...); return len(p), nil }
func (s *stringsBuilder) String() string              { return string(s.b) }
