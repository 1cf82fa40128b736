package spec

import (
	"errors"
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
		// days, the unit coreutils timeout has too
		{"1d", 24 * time.Hour, false},
		{"1.5d", 36 * time.Hour, false},
		{"0d", 0, false},
		{"-1d", 0, true},
		{"d", 0, true},
		{"1dd", 0, true},
		{"0x10d", 0, true},
		{"99999d", 0, true},
		// not zero, but under a nanosecond: it would read as no deadline
		{"1e-10000", 0, true},
		{"1e-10", 0, true},
		{"0.0000000001", 0, true},
		{"0.1ns", 0, true},
		{"1e-10000d", 0, true},
		{"0e5", 0, false},
		{"0.000", 0, false},
		{"1e-9", time.Nanosecond, false},
		{"0x10", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, err=%v", tt.in, got, err, tt.want, tt.err)
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
