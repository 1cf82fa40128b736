package sigdefault

import (
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/tether-sh/tether/internal/testutil"
)

// TestMain runs the tests with no signal ignored but those they ignore
// themselves (testutil.DefaultSignals).
func TestMain(m *testing.M) { testutil.Main(m) }

// TestAsC sends signals to a program that called AsC: it dies of the
// first, as a C program does, unless it was started with that one ignored
// (`trap ”`): then it drops it and dies of the next, USR2. (The program
// is built as a tool is installed: go test's own binary has no symbol
// table, without which the signals ignored at start are unknown.)
func TestAsC(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to build the helper")
	}
	bin := filepath.Join(t.TempDir(), "asc")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/asc").CombinedOutput(); err != nil {
		t.Fatalf("go build asc: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		trap   string // signals the shell ignores before it execs asc
		send   []syscall.Signal
		diesOf syscall.Signal
	}{
		{"", []syscall.Signal{syscall.SIGQUIT}, syscall.SIGQUIT},
		{"", []syscall.Signal{syscall.SIGUSR1}, syscall.SIGUSR1},
		{"", []syscall.Signal{syscall.SIGUSR2}, syscall.SIGUSR2},
		{"", []syscall.Signal{syscall.SIGALRM}, syscall.SIGALRM},
		{"", []syscall.Signal{syscall.SIGPWR}, syscall.SIGPWR},
		// A pending signal of a lower number is taken first: the one
		// dropped is handled before USR2.
		{"QUIT", []syscall.Signal{syscall.SIGQUIT, syscall.SIGUSR2}, syscall.SIGUSR2},
		{"USR1", []syscall.Signal{syscall.SIGUSR1, syscall.SIGUSR2}, syscall.SIGUSR2},
	} {
		ready := filepath.Join(t.TempDir(), "ready")
		c := exec.Command("sh", "-c", `trap '' `+tc.trap+`; exec "$@"`, "sh", bin, ready)
		if tc.trap == "" {
			c.Args[2] = `exec "$@"`
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		testutil.WaitFile(t, ready, 30*time.Second)
		for _, s := range tc.send {
			c.Process.Signal(s)
		}
		c.Wait()
		ws := c.ProcessState.Sys().(syscall.WaitStatus)
		if !ws.Signaled() || ws.Signal() != tc.diesOf {
			t.Errorf("asc under trap %q, sent %v: %v; want it to die of %v", tc.trap, tc.send, c.ProcessState, tc.diesOf)
		}
	}
}
