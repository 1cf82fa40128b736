//go:build linux

package runner_test

import (
	"os"
	"os/signal"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/runner"
)

// TestCatch: a caught signal arrives on C instead of taking its default
// action, and is no longer caught once Stop is called; CatchSoon's once
// Caught has returned.
func TestCatch(t *testing.T) {
	for _, tt := range []struct {
		name  string
		catch func(...os.Signal) *runner.Catcher
	}{
		{"Catch", runner.Catch},
		{"CatchSoon", runner.CatchSoon},
	} {
		c := tt.catch(unix.SIGUSR2)
		c.Caught()
		unix.Kill(os.Getpid(), unix.SIGUSR2)
		select {
		case sig := <-c.C():
			if sig != unix.SIGUSR2 {
				t.Errorf("%s(USR2) got %v; want USR2", tt.name, sig)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s(USR2): nothing caught after 10s", tt.name)
		}
		c.Stop()
		// Something must still take USR2, or it would kill the test.
		guard := make(chan os.Signal, 1)
		signal.Notify(guard, unix.SIGUSR2)
		unix.Kill(os.Getpid(), unix.SIGUSR2)
		<-guard
		signal.Stop(guard)
		select {
		case sig := <-c.C():
			t.Errorf("after Stop, %s(USR2) still got %v; want nothing", tt.name, sig)
		default:
		}
	}
}

// TestCatchSoonIgnored: CatchSoon leaves an ignored signal ignored, as
// Catch does (Forwardable), and Stop before Caught waits rather than
// stopping what is not caught yet.
func TestCatchSoonIgnored(t *testing.T) {
	signal.Ignore(unix.SIGWINCH)
	defer signal.Reset(unix.SIGWINCH)
	c := runner.CatchSoon(unix.SIGWINCH)
	c.Stop()
	if !signal.Ignored(unix.SIGWINCH) {
		t.Errorf("CatchSoon(WINCH) of an ignored WINCH: no longer ignored")
	}
	unix.Kill(os.Getpid(), unix.SIGWINCH)
	select {
	case sig := <-c.C():
		t.Errorf("CatchSoon(WINCH) of an ignored WINCH got %v; want nothing", sig)
	default:
	}
}

// TestForwardable: signals the process ignores are not forwarded.
func TestForwardable(t *testing.T) {
	signal.Ignore(unix.SIGWINCH)
	defer signal.Reset(unix.SIGWINCH)
	tests := []struct {
		in, want []os.Signal
	}{
		{nil, nil},
		{[]os.Signal{unix.SIGTERM}, []os.Signal{unix.SIGTERM}},
		{[]os.Signal{unix.SIGWINCH, unix.SIGTERM, unix.SIGWINCH}, []os.Signal{unix.SIGTERM}},
		{[]os.Signal{unix.SIGWINCH}, []os.Signal{}},
	}
	for _, tt := range tests {
		in := slices.Clone(tt.in)
		got := runner.Forwardable(tt.in)
		if len(got) != len(tt.want) || (len(got) > 0 && !slices.Equal(got, tt.want)) {
			t.Errorf("Forwardable(%v) = %v; want %v", tt.in, got, tt.want)
		}
		if !slices.Equal(tt.in, in) {
			t.Errorf("Forwardable(%v) changed its argument to %v", in, tt.in)
		}
	}
}
