package runner

import (
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/internal/sigpipe"
	"github.com/tether-sh/tether/lib/internal/sigstate"
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
	c      chan os.Signal
	caught chan struct{} // closed once the signals are caught
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
// ignored (KeepIgnored). Catching one would install a handler, which exec
// resets to the default action: the command would die of the HUP or TERM
// its caller meant it to ignore.
func Catch(sigs ...os.Signal) *Catcher {
	c := newCatcher()
	c.catch(sigs)
	return c
}

// CatchSoon is Catch in the background: it returns at once, and sigs are
// caught by the time Caught returns. Until then a signal still takes its
// default action, so the caller waits for Caught before it commits to
// what a signal must not cut short (ledger run: before its claim). The
// signals the process was started with ignored are ignored again first,
// and a runner waits for that before it starts a command (KeepIgnored runs
// once; a second caller blocks until the first is done), so a command
// never misses one. Why: catching takes about 1 ms here (KeepIgnored reads
// the binary's symbol table, and each signal is a handshake with the
// runtime's signal thread), which this overlaps with the caller's own
// work, such as opening the store and forking the command.
func CatchSoon(sigs ...os.Signal) *Catcher {
	c := newCatcher()
	go c.catch(sigs)
	return c
}

func newCatcher() *Catcher {
	return &Catcher{c: make(chan os.Signal, catchBuffer), caught: make(chan struct{})}
}

func (c *Catcher) catch(sigs []os.Signal) {
	defer close(c.caught)
	SurviveEPIPE()
	sigs = Forwardable(sigs)
	if len(sigs) > 0 {
		// With no signal at all, Notify would catch every one.
		signal.Notify(c.c, sigs...)
	}
}

// Caught returns once the signals are caught: at once after Catch.
func (c *Catcher) Caught() { <-c.caught }

// C delivers the caught signals.
func (c *Catcher) C() chan os.Signal { return c.c }

// Stop stops catching, once caught: the signals take their previous
// action again. Signals already caught stay in C.
func (c *Catcher) Stop() {
	c.Caught()
	signal.Stop(c.c)
}

// Forwardable returns sigs without those the process was started with
// ignored: a runner started under nohup, or as a shell's background job
// (INT and QUIT ignored), must stay deaf to them and not pass them on.
func Forwardable(sigs []os.Signal) []os.Signal {
	return slices.DeleteFunc(slices.Clone(sigs), func(s os.Signal) bool {
		n, ok := s.(syscall.Signal)
		return ok && sigstate.Ignored(n) || signal.Ignored(s)
	})
}

var keepIgnored sync.Once

// KeepIgnored ignores, once, every signal the process was started with
// ignored (sigstate.Passed), so that every command started after it
// inherits them ignored, as under a C runner: `trap ” PIPE` before
// `reap -- yes | head` gives yes a write error, not a SIGPIPE. The Go
// runtime forgets them at start (it installs its handlers, which exec
// resets to the default action) unless told again with signal.Ignore.
// Every runner calls it before it starts anything (Catch does); a
// process that execs itself away calls sigstate.Restore instead.
func KeepIgnored() {
	keepIgnored.Do(func() {
		for _, s := range sigstate.Passed() {
			signal.Ignore(s)
		}
	})
}

// SurviveEPIPE keeps the runner alive when its stderr (or stdout) is a
// pipe nobody reads any more: Go kills a program writing to such a pipe on
// descriptor 1 or 2 with SIGPIPE, unless SIGPIPE is caught or ignored. A
// runner's own diagnostics must never kill it, with its command's record
// unfinished and its leftovers unreaped: caught, the write fails with
// EPIPE and the runner goes on. The command is unaffected: a caught signal
// is reset to its default action at exec. When the caller ignored SIGPIPE,
// it stays ignored instead (KeepIgnored), for the command to inherit: the
// write fails with EPIPE all the same. The catching is sigpipe.Survive's,
// shared with cli.Output.
func SurviveEPIPE() {
	KeepIgnored()
	sigpipe.Survive()
}
