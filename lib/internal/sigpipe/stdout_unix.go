//go:build unix

package sigpipe

import (
	"os"

	"golang.org/x/sys/unix"
)

// Stdout returns a file writing to the process's standard output whose
// write to a pipe nobody reads fails with EPIPE, as after Survive, without
// catching SIGPIPE: a close-on-exec duplicate of descriptor 1, named
// /dev/stdout as os.Stdout is. Go kills a program with SIGPIPE only for a
// write to descriptor 1 or 2 (see os/signal); the duplicate is the same
// open file, so its writes keep their order with every other write to
// standard output. When descriptor 1 cannot be duplicated (it is closed,
// or no descriptor is free) Stdout calls Survive and returns os.Stdout,
// whose writes then fail as they would have. Each call makes a new
// duplicate: call it once, at the first write.
func Stdout() *os.File { return duplicate(1, os.Stdout) }

// Stderr is Stdout for standard error (descriptor 2, /dev/stderr): a
// tool's own diagnostics must never kill it (CONTRACT.md §1.2).
func Stderr() *os.File { return duplicate(2, os.Stderr) }

// duplicate returns a close-on-exec duplicate of descriptor fd, named as
// f, the os.File of it; or f, after Survive, when there is none.
func duplicate(fd int, f *os.File) *os.File {
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		Survive()
		return f
	}
	return os.NewFile(uintptr(dup), f.Name())
}
