// Package testutil holds what tether's tests share beyond a package: the
// test binary taking a role in a process of its own, a copy of it another
// user can run, waiting for a file a child writes when it is ready, and
// the shell children that lib's own tests stop, watch and judge
// (StartGroup).
//
// A test binary re-executed with a role's variable set plays that role
// instead of running the tests, so tests race real processes without
// building anything:
//
//	var tool = testutil.Role("LEDGER_TEST_MAIN")
//
//	func TestMain(m *testing.M) {
//		tool.Serve(func(_ string, args []string) int { return Main(args) })
//		os.Exit(m.Run())
//	}
//
//	c := tool.Command("ledger", "claim", "job") // this binary, as the ledger tool
package testutil

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Role is the environment variable that makes the test binary play a part
// other than running the tests; its value names the part.
type Role string

// Serve plays the part the environment asks for, if any, and exits with
// what play returns; without the variable it returns at once. Call it
// first in TestMain. play gets the part's name and the arguments after the
// program name.
func (r Role) Serve(play func(part string, args []string) int) {
	if part := os.Getenv(string(r)); part != "" {
		os.Exit(play(part, os.Args[1:]))
	}
}

// Command is this test binary run with args, playing part (see Serve).
func (r Role) Command(part string, args ...string) *exec.Cmd {
	c := exec.Command(os.Args[0], args...)
	c.Env = append(os.Environ(), string(r)+"="+part)
	return c
}

// Self is the path of the running test binary.
func Self(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// SharedCopy copies the test binary into a fresh folder that every user
// may search (t.TempDir's parent is not), for a test that runs it as
// another user. It returns the copy's path and its folder, both removed
// when the test ends.
func SharedCopy(t testing.TB, prefix string) (exe, dir string) {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe = filepath.Join(dir, "helper")
	if err := copyExecutable(Self(t), exe); err != nil {
		t.Fatal(err)
	}
	return exe, dir
}

func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// WaitFile waits until path exists, for a child that creates it (touch)
// once it is ready; the test fails if it does not within limit.
func WaitFile(t testing.TB, path string, limit time.Duration) {
	t.Helper()
	waitFor(t, path, limit, func() bool {
		_, err := os.Stat(path)
		return err == nil
	})
}

// WaitContent waits until path holds more than white space, for a child
// that writes a value into it (`echo $id >file` creates the file before it
// writes), and returns the content trimmed; the test fails if nothing is
// written within limit.
func WaitContent(t testing.TB, path string, limit time.Duration) string {
	t.Helper()
	var content []byte
	waitFor(t, path, limit, func() bool {
		b, err := os.ReadFile(path)
		content = bytes.TrimSpace(b)
		return err == nil && len(content) > 0
	})
	return string(content)
}

func waitFor(t testing.TB, path string, limit time.Duration, ready func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !ready() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not written within %v", path, limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ExitCode is the exit code of a command that ended with err (from Run,
// Output or CombinedOutput): 0 for nil, the status of an *exec.ExitError;
// any other error (it could not be started) fails t.
func ExitCode(t testing.TB, err error) int {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	t.Fatal(err)
	return -1
}
