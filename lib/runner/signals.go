package runner

import (
	"os"
	"os/signal"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// DefaultForward are the signals a runner forwards to the command's group.
var DefaultForward = []os.Signal{
	unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2,
}

// Catcher is the one signal catcher of a runner: the channel that
// signal.Notify fills for the signals a tool handles itself, whether it
// forwards them to its command (Run, ledger run, adopt) or stops the
// command with them (watchpid).
type Catcher struct {
	c chan os.Signal
}

// catchBuffer is deep enough that a burst of signals arriving while the
// command is being started waits for the wait loop rather than being
// dropped by signal.Notify.
const catchBuffer = 16

// Catch starts catching sigs: from now on they are delivered to C instead
// of taking their default action (which for most is the tool's death).
// Call Stop once done. The signals the process was started with ignored
// (Forwardable) are left alone: a runner started under nohup, or as a
// background job, stays deaf to them, and its command inherits them
// ignored. Catching one would install a handler, which exec resets to the
// default action: the command would die of the HUP or INT its caller
// meant it to ignore.
func Catch(sigs ...os.Signal) *Catcher {
	surviveEPIPE()
	sigs = Forwardable(sigs)
	c := &Catcher{c: make(chan os.Signal, catchBuffer)}
	if len(sigs) > 0 {
		// With no signal at all, Notify would catch every one.
		signal.Notify(c.c, sigs...)
	}
	return c
}

// C delivers the caught signals.
func (c *Catcher) C() chan os.Signal { return c.c }

// Stop stops catching: the signals take their previous action again.
// Signals already caught stay in C.
func (c *Catcher) Stop() { signal.Stop(c.c) }

// Forwardable returns sigs without those the process was started with
// ignored: a runner started under nohup, or as a shell's background job
// (INT and QUIT ignored), must stay deaf to them and not pass them on.
func Forwardable(sigs []os.Signal) []os.Signal {
	return slices.DeleteFunc(slices.Clone(sigs), signal.Ignored)
}

// pipeSink receives the SIGPIPEs of the runner's own writes; nobody reads
// it (Notify drops what does not fit).
var (
	pipeSink    = make(chan os.Signal, 1)
	pipeCatcher sync.Once
)

// surviveEPIPE keeps the runner alive when its stderr (or stdout) is a
// pipe nobody reads any more: Go kills a program writing to such a pipe on
// descriptor 1 or 2 with SIGPIPE, unless SIGPIPE is caught. A runner's own
// diagnostics must never kill it, with its command's record unfinished and
// its leftovers unreaped: caught, the write fails with EPIPE and the runner
// goes on. The command is unaffected: a caught signal is reset to its
// default action at exec.
func surviveEPIPE() {
	pipeCatcher.Do(func() { signal.Notify(pipeSink, unix.SIGPIPE) })
}
