package sibling

import (
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
)

// childWant makes the test binary the child of TestParentDeathSignal:
// "set" or "unset", what the child's parent gave it.
const childWant = "SIBLING_TEST_PDEATHSIG"

// TestParentDeathSignal: a process started with a parent-death signal
// keeps its main goroutine on the main thread, the one the signal belongs
// to; one started without does not.
func TestParentDeathSignal(t *testing.T) {
	if want := os.Getenv(childWant); want != "" {
		// init ran on the main thread, whose signal it is; a test runs
		// on another.
		if mainLocked != (want == "set") {
			os.Stderr.WriteString("init's parentDeathSignal() disagrees with the parent\n")
			os.Exit(2)
		}
		os.Exit(0)
	}
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
	}{
		{"set", syscall.SIGKILL},
		{"unset", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The signal is the forking thread's: keep it for the child's life.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cmd := exec.Command(os.Args[0], "-test.run=^TestParentDeathSignal$")
			cmd.Env = append(os.Environ(), childWant+"="+tc.name)
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: tc.sig}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("child started with pdeathsig %d: %v: %s", tc.sig, err, out)
			}
		})
	}
}
