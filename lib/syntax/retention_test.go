package syntax

import (
	"errors"
	"testing"
	"time"
)

func TestParseRetention(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"7d", 7 * Day, true},
		{"1.5d", 36 * time.Hour, true},
		{"0d", 0, true},
		{" 2d ", 2 * Day, true},
		{"36h", 36 * time.Hour, true},
		{"90", 90 * time.Second, true},
		{"d", 0, false},
		{"-1d", 0, false},
		{"1e3d", 0, false},
		{"0x10d", 0, false},
		{"7dd", 0, false},
		{"7d2h", 0, false},
		{"NaNd", 0, false},
		{"Infd", 0, false},
		{"999999d", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseRetention(tt.in)
		if tt.ok && (err != nil || got != tt.want) {
			t.Errorf("ParseRetention(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
		if !tt.ok && !errors.Is(err, ErrBadDuration) {
			t.Errorf("ParseRetention(%q) = %v, %v; want ErrBadDuration", tt.in, got, err)
		}
	}
}
