//go:build linux

// Command subreaper marks itself child subreaper and execs its arguments.
// The flag survives execve, so the program it runs (bash, for the reap
// benchmark) inherits orphans and reaps them: the reference cleanup in
// bench/reap/run.sh needs that on machines whose PID 1 never reaps, or
// pgrep would list its killed leftovers as zombies for ever.
//
//	subreaper bash run.sh
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: subreaper CMD [ARGS...]")
		os.Exit(2)
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "subreaper: PR_SET_CHILD_SUBREAPER:", err)
		os.Exit(125)
	}
	path, err := exec.LookPath(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "subreaper:", err)
		os.Exit(127)
	}
	err = syscall.Exec(path, os.Args[1:], os.Environ())
	fmt.Fprintln(os.Stderr, "subreaper: exec:", err)
	os.Exit(126)
}
