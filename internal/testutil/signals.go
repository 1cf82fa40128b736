package testutil

import (
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// signalsReset marks a test binary that DefaultSignals re-executed, so
// that it never does so twice.
const signalsReset = "TETHER_TEST_SIGNALS_RESET"

// DefaultSignals starts the tests again, in this process, with every
// signal the caller left ignored back at its default action. nohup, or a
// CI agent, may start `go test` with SIGHUP ignored, and the tools pass
// an ignored signal on to what they run, as they must: tests that check
// which signals reach a command, or that stop a tool with HUP, would then
// see the caller's choice on top of their own. Call it first in TestMain.
// It acts only where the binary was started to run tests (go test passes
// it -test.* flags), never where it plays a tool or a role: there, a
// signal ignored is the scenario's own choice. Where it cannot (no /proc,
// exec refused) it says so and returns, and the tests run as they were
// started.
func DefaultSignals() {
	if os.Getenv(signalsReset) != "" {
		os.Unsetenv(signalsReset)
		return
	}
	if !slices.ContainsFunc(os.Args[1:], func(a string) bool { return strings.HasPrefix(a, "-test.") }) {
		return
	}
	ignored, err := ignoredSignals()
	if err != nil || len(ignored) == 0 {
		return
	}
	// Caught, a signal is reset to its default action by exec; ignored,
	// it would stay ignored.
	signal.Notify(make(chan os.Signal, 1), ignored...)
	os.Setenv(signalsReset, "1")
	err = syscall.Exec("/proc/self/exe", os.Args, os.Environ())
	signal.Reset(ignored...)
	os.Unsetenv(signalsReset)
	fmt.Fprintf(os.Stderr, "testutil: cannot run the tests again with %v at their default action: %v\n", ignored, err)
}

// Main is a TestMain that runs the tests with DefaultSignals:
//
//	func TestMain(m *testing.M) { testutil.Main(m) }
func Main(m *testing.M) {
	DefaultSignals()
	os.Exit(m.Run())
}
