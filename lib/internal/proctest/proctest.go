// Package proctest starts the shell children that lib's own tests stop,
// watch and judge.
package proctest

import (
	"bufio"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// StartGroup runs `sh -c script` as the leader of a new process group and
// waits for the first line it prints, which the script writes once it is
// ready (a trap set, a helper started); the line is returned trimmed. The
// child is reaped in the background, and the whole group is KILLed when
// the test ends.
func StartGroup(t *testing.T, script string) (*exec.Cmd, string) {
	t.Helper()
	c := exec.Command("sh", "-c", script)
	c.SysProcAttr = &unix.SysProcAttr{Setpgid: true}
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	t.Cleanup(func() {
		unix.Kill(-c.Process.Pid, unix.SIGKILL)
		<-exited
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	go func() {
		c.Wait()
		close(exited)
	}()
	if err != nil {
		t.Fatalf("StartGroup(%q): no ready line: %v", script, err)
	}
	return c, strings.TrimSpace(line)
}
