package proc

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestExitInfoStatus(t *testing.T) {
	tests := []struct {
		in     ExitInfo
		status int
		str    string
	}{
		{ExitInfo{Code: 0, Reaped: true}, 0, "exited 0"},
		{ExitInfo{Code: 3}, 3, "exited 3"},
		{ExitInfo{Code: 255}, 255, "exited 255"},
		{ExitInfo{Signal: unix.SIGKILL}, 137, "was killed by KILL"},
		{ExitInfo{Signal: unix.SIGTERM, Reaped: true}, 143, "was killed by TERM"},
		{ExitInfo{Signal: unix.SIGSEGV, CoreDumped: true}, 139, "was killed by SEGV (core dumped)"},
		{ExitInfo{Signal: 64}, 192, "was killed by 64"},
	}
	for _, tt := range tests {
		if got := tt.in.Status(); got != tt.status {
			t.Errorf("%+v.Status() = %d; want %d", tt.in, got, tt.status)
		}
		if got := tt.in.String(); got != tt.str {
			t.Errorf("%+v.String() = %q; want %q", tt.in, got, tt.str)
		}
	}
}

func TestExitInfoFromWaitStatus(t *testing.T) {
	tests := []struct {
		ws     uint32
		reaped bool
		want   ExitInfo
	}{
		{0x0000, true, ExitInfo{Reaped: true}},
		{0x0300, false, ExitInfo{Code: 3}},
		{0xff00, true, ExitInfo{Code: 255, Reaped: true}},
		{0x0009, true, ExitInfo{Signal: unix.SIGKILL, Reaped: true}},
		{0x000f, false, ExitInfo{Signal: unix.SIGTERM}},
		{0x008b, true, ExitInfo{Signal: unix.SIGSEGV, CoreDumped: true, Reaped: true}},
	}
	for _, tt := range tests {
		if got := exitInfoFromWaitStatus(tt.ws, tt.reaped); got != tt.want {
			t.Errorf("exitInfoFromWaitStatus(%#x, %v) = %+v; want %+v", tt.ws, tt.reaped, got, tt.want)
		}
	}
}
