//go:build unix

package sigpipe

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// childEnv makes the test binary the child of TestSurvive.
const childEnv = "SIGPIPE_TEST_CHILD"

// TestSurvive: after Survive, a write to a stdout pipe nobody reads fails
// with EPIPE instead of killing the process.
func TestSurvive(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		Survive()
		_, err := os.Stdout.Write([]byte("lost\n"))
		if errors.Is(err, syscall.EPIPE) {
			os.Exit(0)
		}
		os.Exit(3)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // nobody reads
	cmd := exec.Command(os.Args[0], "-test.run=^TestSurvive$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stdout = w
	err = cmd.Run()
	w.Close()
	if err != nil {
		t.Errorf("child writing to a closed pipe after Survive: %v; want exit 0 (the write failed with EPIPE)", err)
	}
}
