package runner

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/syntax"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/proc"
	"github.com/tether-sh/tether/lib/stop"
)

// ErrBusy is returned when Run is called while another Run is running in
// the same process: there can be only one owner of wait4.
var ErrBusy = errors.New("another command is already running in this process")

// ErrStoppedHeld: a stop signal arrived while the command was held, before
// its first instruction; it was killed and never ran.
var ErrStoppedHeld = errors.New("stopped before it ran")

// Options says what to run and how to stop it.
type Options struct {
	// Argv is the command and its arguments; Argv[0] is looked up in PATH
	// when it contains no slash, as execvp(3) does (in /bin:/usr/bin when
	// PATH is unset).
	Argv []string
	// Env is the command's environment; nil inherits the runner's.
	Env []string
	// Dir is the command's working directory; empty inherits the runner's.
	Dir string
	// Stdin, Stdout and Stderr are handed to the command as they are; nil
	// inherits the runner's own. They are files, not io.Readers, so that no
	// copying goroutine needs exec.Cmd.Wait to finish.
	Stdin, Stdout, Stderr *os.File

	// Signal is the first signal of every bounded stop (deadline and
	// leftovers); zero means TERM.
	Signal unix.Signal
	// Grace is the wait after Signal before KILL. Zero means KILL at once;
	// tools pass their --grace (default stop.DefaultGrace).
	Grace time.Duration
	// Schedule, when set, replaces Signal and Grace.
	Schedule stop.Schedule
	// Deadline, when positive, stops the command's process group once it
	// has run that long; the result is then 124.
	Deadline time.Duration
	// Forward lists the signals forwarded to the command's process group;
	// nil means DefaultForward. A signal the runner was started with
	// ignored (nohup) is neither caught nor forwarded.
	Forward []os.Signal

	// PIDNamespace runs the command as init of a new PID namespace
	// (CLONE_NEWPID; needs CAP_SYS_ADMIN). When the command ends — or the
	// runner is SIGKILLed, which kills the command through its parent-death
	// signal — the kernel kills everything left in the namespace, so
	// nothing survives even the runner. As a namespace's init, the command
	// receives only the signals it has handlers for (and KILL): a forwarded
	// TERM that it does not handle is ignored, and stops escalate to KILL.
	PIDNamespace bool

	// Signals, when set, replaces Forward: the channel of a Catcher the
	// caller started earlier — before claiming the work Run will do — so
	// that a signal arriving before the command exists is not lost nor
	// fatal, but forwarded to the command as soon as it runs. The caller
	// stops the Catcher.
	Signals chan os.Signal

	// Stop, when set, stops the command boundedly the moment it delivers a
	// signal, as the deadline and ctx do: its process group (and the
	// command, should it have left the group) with the schedule, the
	// signal received replacing the schedule's first (zero, or a closed
	// channel, keeps it). Result.Stopped then reports it; ExitCode is the
	// command's own status. Only the first of the deadline, ctx and Stop
	// stops the command.
	Stop <-chan unix.Signal

	// OnStart, when set, is called once with the command's identity while
	// the command is held (gate_linux.go): its process exists, its PID@START and
	// process group are final, but not one instruction of the command has
	// run. The command runs only once OnStart returns nil (ledger run and
	// adopt record it durably there); an error keeps it from ever running,
	// and Run returns that error with code 125 (or the error's own
	// *exit.Error code).
	OnStart func(child proc.ID) error

	// HeldStop, when set, is closed by Run when a stop signal (TERM, INT,
	// HUP) arrives while OnStart runs: OnStart should then give up what it
	// has not begun to commit (a claim waiting for the store's lock) and
	// return. Run waits for OnStart's answer either way before it returns
	// ErrStoppedHeld, so that what OnStart did commit is the caller's to
	// settle: a record made as the runner gave up would otherwise stay
	// running after it exited.
	HeldStop chan<- struct{}

	// Stamp, with OnStart, is one variable of the command's environment
	// whose value only OnStart learns (ledger run's fencing token, which
	// the claim that records the command gives). The command is started
	// with Stamp.Name set to a placeholder of StampWidth bytes; once
	// OnStart has returned nil, the value Stamp.Value returns (1 to
	// StampWidth bytes, no NUL, no '=') is set in its place before the
	// command's first instruction: written into the held command's
	// environment (traced) or handed to the gate with its release. A
	// value that cannot be set keeps the command from running, as an
	// OnStart error does.
	Stamp *Stamp
}

// Stamp names an environment variable set once the command is recorded
// (Options.Stamp).
type Stamp struct {
	Name  string
	Value func() string
}

// StampWidth is the most bytes a stamped value may have: an unsigned
// 64-bit integer in decimal.
const StampWidth = 20

// stampPlaceholder is what a stamped variable holds until it is set.
var stampPlaceholder = strings.Repeat("0", StampWidth)

// Result is what happened to the command and what it left behind.
type Result struct {
	// Child is the command's process, PID@START.
	Child proc.ID
	// Status is the command's raw wait status; ExitCode its exit code per
	// CONTRACT.md §2: its exit status, 128+N when it died of signal N, 124 when
	// the deadline stopped it.
	Status   syscall.WaitStatus
	ExitCode int
	// Signaled reports that the command died of a signal.
	Signaled bool
	// DeadlineHit reports that Options.Deadline stopped the command;
	// Canceled that ctx did (ExitCode is then the command's own status).
	DeadlineHit bool
	Canceled    bool
	// Stopped reports that Options.Stop stopped the command.
	Stopped bool
	// StopIgnored, when the command was stopped (deadline, ctx or Stop)
	// and its group outlived the first signal, is the signal it ignored:
	// the one sent just before KILL. Zero when no KILL was needed.
	StopIgnored unix.Signal
	// Leftovers are the processes the command left behind when it ended
	// (zombies included), every one stopped and reaped unless listed in
	// Survivors. Sorted by PID; START is 0 for one reaped before it was seen.
	Leftovers []proc.ID
	// Killed are the leftovers that needed KILL.
	Killed []proc.ID
	// Survivors outlived even KILL (or the command did): still there when
	// Run returned.
	Survivors []proc.ID
	// Unjudged is why leftovers could not be judged gone (a /proc that
	// could not be read: descriptors ran out), with the processes still
	// unreaped: never taken for "all stopped".
	Unjudged error
	// Schedule is the bounded stop that was used.
	Schedule stop.Schedule
	// Cleanup is the time from the command's exit to Run's return: what
	// stopping and reaping the leftovers cost.
	Cleanup time.Duration
}

// Code is the runner's exit code: 125 when something survived KILL or
// could not be judged gone (the message must say so), else ExitCode.
func (r Result) Code() int {
	if len(r.Survivors) > 0 || r.Unjudged != nil {
		return exit.NotRun
	}
	return r.ExitCode
}

// StartError turns an error from starting command name into a one-line
// *exit.Error in a shell's words, carrying 127 (not found), 126 (not
// executable) or 125. The name is the user's word, its control characters
// escaped: a newline in it must not split the diagnostic into lines that
// each read as one. Invalid UTF-8 is left for a ledger record to keep as
// U+FFFD and for the diagnostic to escape when it prints.
func StartError(name string, err error) error {
	code := exit.ForStart(err)
	quoted := syntax.EscapeControlChars(name)
	var ee *exec.Error
	var pe *fs.PathError
	switch {
	case code == exit.NotFound && errors.As(err, &ee) && foundInPath(name):
		// As execvp does: a name found in PATH only as a directory or a
		// file without execute permission cannot be executed.
		return exit.Errorf(exit.NoExec, "%s: cannot execute: %w", quoted, fs.ErrPermission)
	case code == exit.NotFound && errors.As(err, &pe) && errors.Is(err, syscall.ENOENT):
		if why := missingPart(pe.Path); why != "" {
			return exit.Errorf(code, "%s: %s", quoted, why)
		}
		return exit.Errorf(code, "%s: command not found", quoted)
	case code == exit.NotFound:
		return exit.Errorf(code, "%s: command not found", quoted)
	case errors.As(err, &ee) && errors.Is(err, exec.ErrDot):
		return exit.Errorf(code, "%s: refusing to run a command found in the current directory through PATH: %w", quoted, err)
	case code == exit.NoExec:
		return exit.Errorf(code, "%s: cannot execute: %w", quoted, proc.UnwrapPath(err))
	}
	return exit.Errorf(code, "%s: cannot start: %w", quoted, proc.UnwrapPath(err))
}

// foundInPath reports whether name, which PATH lookup did not find as an
// executable, is there all the same: a directory, or a file without
// execute permission.
func foundInPath(name string) bool {
	if name == "" || strings.Contains(name, "/") {
		return false
	}
	for _, dir := range searchPath() {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

// defaultPath is glibc's confstr(_CS_PATH), which execvp(3) searches when
// PATH is unset: cron's env -i, a unit with a bare environment.
const defaultPath = "/bin:/usr/bin"

// searchPath is where execvp(3) looks for a name without a slash: an
// unset PATH is defaultPath, and an empty entry (an empty PATH is one) the
// current directory.
func searchPath() []string {
	path, set := os.LookupEnv("PATH")
	if !set {
		path = defaultPath
	}
	dirs := strings.Split(path, ":")
	for i, dir := range dirs {
		if dir == "" {
			dirs[i] = "."
		}
	}
	return dirs
}

// command is exec.Command(argv[0], argv[1:]...), whose lookup searches
// nothing when PATH is unset or empty, but finding the command where
// execvp(3) would (searchPath); argv[0] stays as given. A command found
// only through a relative entry is refused as exec.LookPath refuses it
// (exec.ErrDot). The command's environment is left as it is: PATH is
// not added to it.
func command(argv []string) *exec.Cmd {
	name := argv[0]
	if os.Getenv("PATH") != "" || strings.Contains(name, "/") {
		return exec.Command(name, argv[1:]...)
	}
	for _, dir := range searchPath() {
		// With a slash LookPath only checks the file, as execvp does.
		path, err := exec.LookPath(dir + "/" + name)
		if err != nil {
			continue
		}
		cmd := exec.Command(path, argv[1:]...)
		cmd.Args[0] = name
		if !filepath.IsAbs(path) {
			cmd.Err = &exec.Error{Name: name, Err: exec.ErrDot}
		}
		return cmd
	}
	// Not found: the lookup's own error, as with any PATH.
	return exec.Command(name, argv[1:]...)
}

// missingPart says what is missing when exec of the file at path, which
// exists, failed with ENOENT: the interpreter its #! line names (bash's
// "bad interpreter"), or another file its loading needs (an ELF's dynamic
// loader). Empty when path itself does not exist.
func missingPart(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	head := make([]byte, 256)
	n, _ := io.ReadFull(f, head)
	line, _, _ := bytes.Cut(head[:n], []byte("\n"))
	if rest, ok := bytes.CutPrefix(line, []byte("#!")); ok {
		if fields := strings.Fields(string(rest)); len(fields) > 0 {
			if _, err := os.Stat(fields[0]); err != nil {
				return fmt.Sprintf("bad interpreter: %s: %v", fields[0], proc.UnwrapPath(err))
			}
		}
	}
	return "cannot execute: required file not found"
}
