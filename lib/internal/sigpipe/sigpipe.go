// Package sigpipe keeps a tool alive when its standard output or error is
// a pipe nobody reads any more. It is the one SIGPIPE catcher of the
// tools: runner.SurviveEPIPE (every runner, before it starts anything)
// catches SIGPIPE once with Survive. A tool that only prints (cli.Output,
// cli.Tool's diagnostics) catches nothing: it writes through Stdout and
// Stderr, which fail with EPIPE all the same, without the thread and
// goroutine catching a signal costs at start-up.
package sigpipe

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// sink receives the SIGPIPEs of the process's own writes; nobody reads it
// (Notify drops what does not fit).
var (
	sink = make(chan os.Signal, 1)
	once sync.Once
)

// Survive makes a write to a pipe with no reader fail with EPIPE instead
// of killing the process: Go kills a program writing to such a pipe on
// descriptor 1 or 2 with SIGPIPE, unless SIGPIPE is caught or ignored. A
// caught signal is reset to its default action at exec, so a command
// started later still gets the default. When SIGPIPE is ignored already
// (runner.KeepIgnored keeps a caller's), it is left ignored, for the
// commands started later to inherit: the write fails with EPIPE all the
// same. Should SIGPIPE be ignored after Survive (signal.Ignore), it stays
// ignored: Ignore ends the catching.
func Survive() {
	once.Do(func() {
		if !signal.Ignored(syscall.SIGPIPE) {
			signal.Notify(sink, syscall.SIGPIPE)
		}
	})
}
