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
// action, and is no longer caught once Stop is called.
func TestCatch(t *testing.T) {
	c := runner.Catch(unix.SIGUSR2)
	unix.Kill(os.Getpid(), unix.SIGUSR2)
	select {
	case sig := <-c.C():
		if sig != unix.SIGUSR2 {
			t.Errorf("Catch(USR2) got %v; want USR2", sig)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Catch(USR2): nothing caught after 10s")
	}
	c.Stop()
	// Something must still take USR2, or it would kill the test.
	guard := make(chan os.Signal, 1)
	signal.Notify(guard, unix.SIGUSR2)
	defer signal.Stop(guard)
	unix.Kill(os.Getpid(), unix.SIGUSR2)
	<-guard
	select {
	case sig := <-c.C():
		t.Errorf("after Stop, Catch(USR2) still got %v; want nothing", sig)
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
