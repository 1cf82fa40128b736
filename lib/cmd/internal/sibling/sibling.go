// Package sibling finds the programs installed beside this one (adopt for
// ledger spawn, tether-pg for a PostgreSQL store) and execs one in this
// program's place (lib/cmd/internal/store.Route decides when).
//
//	adopt, err := sibling.Find("adopt")
//	err := sibling.Exec("tether-pg", "ledger", args) // returns only on failure
package sibling

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"

	"github.com/tether-sh/tether/lib/internal/sigstate"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/location"
)

// When the caller set a parent-death signal (setpriv --pdeathsig, prctl
// PR_SET_PDEATHSIG), the main goroutine keeps the main thread, so that
// Exec, called from it, execs from the thread the process started
// on: the signal is that thread's, and an exec from any other thread would
// drop it — the exec'd tether-pg would then outlive its parent. Without
// one there is nothing to keep, and a locked main goroutine costs a
// thread hand-off each time it blocks.
func init() {
	if mainLocked = parentDeathSignal(); mainLocked {
		runtime.LockOSThread()
	}
}

// mainLocked: init kept the main goroutine on the main thread.
var mainLocked bool

// ErrNotFound: the program is neither beside this one nor on PATH.
var ErrNotFound = errors.New("program not found")

// Find returns the path of program name: beside this executable (as
// install.sh and the packages put them, whatever this one is called or
// however it was reached: os.Executable is the file itself), else on
// PATH.
func Find(name string) (string, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w: cannot find the %s program beside this one or on PATH", ErrNotFound, name)
	}
	return p, nil
}

// Exec replaces this process with program (tether-pg) running tool
// (ledger or adopt) with args: "tether-pg TOOL ARGS...". The tool is named
// explicitly, never read from argv[0], which a symlink, an installed
// name (tether-ledger) or exec -a can change. Call it from the main
// goroutine, before any signal is caught and anything written or locked:
// the PID stays, so a caller that recorded this process (spawn's ack, an
// owner) still names it. It returns only if program cannot be run, with
// an error that is ledger.ErrUnavailable and says what program was
// wanted for ("PostgreSQL stores are served by").
func Exec(program, tool string, args []string, what string) error {
	pg, err := Find(program)
	if err != nil {
		return unavailable(fmt.Sprintf("%s %s, which is neither beside this program nor on PATH", what, program))
	}
	// Exec keeps ignored only what this process ignores now: give the
	// program back the signals its caller ignored, which the Go runtime
	// here replaced by its handlers at start.
	sigstate.Restore()
	err = syscall.Exec(pg, append([]string{pg, tool}, args...), os.Environ())
	return unavailable(fmt.Sprintf("%s %s, which cannot be run: %v", what, pg, err))
}

// HandedBack reports whether args, a ledger's or adopt's arguments, are
// a command line handed to tether-pg ("ledger ARGS", "adopt ARGS") that
// starts with one of words, which no command line of the caller starts
// with: then the program was started as tether-pg but is not it (a copy
// of ledger, a link to it, a script that runs it), and must refuse rather
// than hand the line on again, forever. ledger passes "ledger" ("ledger
// adopt ID" is its own), adopt both. Only a command line that is to be
// routed is asked: a shell completing passes the command's name as the
// first argument (bash: "ledger ledger CUR PREV"), and is never routed.
func HandedBack(args []string, words ...string) bool {
	return len(args) > 0 && slices.Contains(words, args[0])
}

// ErrHandedBack is HandedBack's error: ledger.ErrUnavailable.
var ErrHandedBack error = unavailable("this program was handed a command line for " + location.PostgresBinary + ", which it is not (a copy of ledger or adopt installed as " + location.PostgresBinary + ", or a link to one?)")

// unavailable is ledger.ErrUnavailable that reads as its message alone.
type unavailable string

func (e unavailable) Error() string { return string(e) }
func (e unavailable) Unwrap() error { return ledger.ErrUnavailable }
