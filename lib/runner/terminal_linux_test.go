package runner_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/internal/testutil"
	"github.com/tether-sh/tether/lib/proc"
	"github.com/tether-sh/tether/lib/runner"
)

// ttyRunnerRole makes the test binary the runner under test on a
// terminal: the part is the hold ("plain", or one of runner.Holds).
const ttyRunnerRole = testutil.Role("TETHER_TEST_TTY_RUNNER")

// TestTerminalForeground: a runner in the foreground of a terminal gives
// it to its command, which can read it (it is not stopped by SIGTTIN), and
// takes it back once the command has ended; with every way of holding the
// command.
func TestTerminalForeground(t *testing.T) {
	ttyRunnerRole.Serve(func(hold string, _ []string) int { return ttyRunner(hold) })
	holds := []string{"plain"}
	for _, h := range runner.Holds {
		holds = append(holds, h.Name)
	}
	for _, hold := range holds {
		t.Run(hold, func(t *testing.T) {
			master, slave := openPty(t)
			c := ttyRunnerRole.Command(hold, "-test.run=^TestTerminalForeground$")
			c.Stdin, c.Stdout, c.Stderr = slave, slave, slave
			// A session of its own, with the terminal as its controlling
			// one: the runner is in its foreground, as under a shell.
			c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			slave.Close()
			defer c.Process.Kill()
			out := make(chan string, 1)
			go func() {
				b, _ := io.ReadAll(master) // EIO once the session is gone
				out <- string(b)
			}()
			io.WriteString(master, "hello\n")
			done := make(chan error, 1)
			go func() { done <- c.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("runner on a terminal: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("runner on a terminal still running after 30s: its command could not read the terminal")
				c.Process.Kill()
				<-done
			}
			// The output is read to its end (EIO once no process holds
			// the terminal) before the master is closed: closing it
			// first loses what the runner wrote last.
			var got string
			select {
			case got = <-out:
			case <-time.After(10 * time.Second):
				t.Errorf("the terminal stayed open 10s after the runner ended")
			}
			master.Close()
			for _, want := range []string{"got:hello", "foreground back: true", "exit 0"} {
				if !strings.Contains(got, want) {
					t.Errorf("terminal output = %q; want %q in it", got, want)
				}
			}
		})
	}
}

// ttyRunner runs a command that reads the terminal, then says whether the
// terminal's foreground is the runner's again.
func ttyRunner(hold string) int {
	o := runner.Options{Argv: []string{"sh", "-c", "read x; echo got:$x"}}
	for _, h := range runner.Holds {
		if h.Name == hold {
			defer h.Set()()
			o.OnStart = func(proc.ID) error { return nil }
		}
	}
	res, err := runner.Run(context.Background(), o)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	pg, _ := unix.IoctlGetInt(0, unix.TIOCGPGRP)
	fmt.Printf("foreground back: %v\nexit %d\n", pg == unix.Getpgrp(), res.ExitCode)
	return 0
}

// openPty opens a new pseudo-terminal pair.
func openPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slave.Close() })
	return master, slave
}
