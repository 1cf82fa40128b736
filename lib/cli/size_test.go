package cli

import "testing"

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"65536", 65536, true},
		{"64K", 64 << 10, true},
		{"64k", 64 << 10, true},
		{"64KiB", 64 << 10, true},
		{"64kb", 64 << 10, true},
		{"1M", 1 << 20, true},
		{"2G", 2 << 30, true},
		{"100B", 100, true},
		{"", 0, false},
		{" 1K", 0, false},
		{"-1", 0, false},
		{"1.5M", 0, false},
		{"K", 0, false},
		{"1T", 0, false},
		{"1iB", 1, true},
		{"99999999999G", 0, false},
		{"1x", 0, false},
	} {
		got, err := ParseSize(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
