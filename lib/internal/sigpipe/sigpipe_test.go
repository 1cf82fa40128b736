//go:build unix

package sigpipe

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
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

// TestDuplicates: a write through Stdout or Stderr to a pipe nobody reads
// fails with EPIPE, though nothing catches SIGPIPE, and the duplicate it
// writes through is not inherited across exec.
func TestDuplicates(t *testing.T) {
	streams := []struct {
		name string
		dup  func() *os.File
		std  *os.File
	}{
		{"stdout", Stdout, os.Stdout},
		{"stderr", Stderr, os.Stderr},
	}
	for _, s := range streams {
		if os.Getenv(childEnv) != s.name {
			continue
		}
		f := s.dup()
		if f == s.std {
			os.Exit(4) // not a duplicate
		}
		if flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC == 0 {
			os.Exit(5)
		}
		_, err := f.Write([]byte("lost\n"))
		if errors.Is(err, syscall.EPIPE) && err.Error() == "write /dev/"+s.name+": broken pipe" {
			os.Exit(0)
		}
		os.Exit(3)
	}
	for _, s := range streams {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		r.Close() // nobody reads
		cmd := exec.Command(os.Args[0], "-test.run=^TestDuplicates$")
		cmd.Env = append(os.Environ(), childEnv+"="+s.name)
		if s.name == "stdout" {
			cmd.Stdout = w
		} else {
			cmd.Stderr = w
		}
		err = cmd.Run()
		w.Close()
		if err != nil {
			t.Errorf("child writing through %s's duplicate to a closed pipe: %v; want exit 0 (EPIPE, named /dev/%s, on a close-on-exec descriptor)", s.name, err, s.name)
		}
	}
}
