package syntax

import (
	"errors"
	"strconv"
	"strings"
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
		{"RTMIN+0", 34, false},
		{"RTMAX-0", 64, false},
		{"SIGRTMAX-30", 34, false},
		{"RTMAX-31", 0, true},
		{"32", 32, false},
		{"64", 64, false},
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

// Every name kill -L (util-linux) and kill -l (procps, bash) list is
// accepted, aliases included (#48.9).
func TestParseSignalKillNames(t *testing.T) {
	names := map[string]unix.Signal{
		"HUP": 1, "INT": 2, "QUIT": 3, "ILL": 4, "TRAP": 5, "ABRT": 6, "IOT": 6, "BUS": 7,
		"FPE": 8, "KILL": 9, "USR1": 10, "SEGV": 11, "USR2": 12, "PIPE": 13, "ALRM": 14,
		"TERM": 15, "STKFLT": 16, "CHLD": 17, "CLD": 17, "CONT": 18, "STOP": 19, "TSTP": 20,
		"TTIN": 21, "TTOU": 22, "URG": 23, "XCPU": 24, "XFSZ": 25, "VTALRM": 26, "PROF": 27,
		"WINCH": 28, "IO": 29, "POLL": 29, "PWR": 30, "SYS": 31, "UNUSED": 31,
	}
	for n := 0; n <= 15; n++ {
		names["RTMIN+"+strconv.Itoa(n)] = unix.Signal(34 + n)
	}
	for n := 0; n <= 14; n++ {
		names["RTMAX-"+strconv.Itoa(n)] = unix.Signal(64 - n)
	}
	for name, want := range names {
		for _, in := range []string{name, "SIG" + name, strings.ToLower(name)} {
			if got, err := ParseSignal(in); err != nil || got != want {
				t.Errorf("ParseSignal(%q) = %v, %v; want %d", in, got, err, want)
			}
		}
	}
}

// ParseStopSignal takes 0, which sends nothing (a stop's first signal,
// as timeout -s0), and otherwise what ParseSignal takes.
func TestParseStopSignal(t *testing.T) {
	tests := []struct {
		in   string
		want unix.Signal
		err  bool
	}{
		{"0", 0, false},
		{" 0 ", 0, false},
		{"TERM", unix.SIGTERM, false},
		{"IOT", unix.SIGABRT, false},
		{"00", 0, true},
		{"-0", 0, true},
		{"", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseStopSignal(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseStopSignal(%q) = %v, %v; want %v, err=%v", tt.in, got, err, tt.want, tt.err)
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
