// Command showsig prints what sigstate knows of the signals it was
// started with ignored; with "exec CMD...", it calls sigstate.Restore and
// execs CMD, as the gate and the exec of tether-pg do.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/tether-sh/tether/lib/internal/sigstate"
)

func main() {
	if len(os.Args) > 2 && os.Args[1] == "exec" {
		path, err := exec.LookPath(os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, "showsig:", err)
			os.Exit(127)
		}
		sigstate.Restore()
		err = syscall.Exec(path, os.Args[2:], os.Environ())
		fmt.Fprintln(os.Stderr, "showsig:", err)
		os.Exit(126)
	}
	fmt.Printf("exact=%v passed=%v pipe=%v\n", sigstate.Exact(), sigstate.Passed(), sigstate.Ignored(syscall.SIGPIPE))
}
