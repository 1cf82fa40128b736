package stopbounded

import (
	"github.com/alecthomas/kong"

	"github.com/tether-sh/tether/lib/cli/kongcli"
	"github.com/tether-sh/tether/lib/internal/manual"
)

// Page is stopbounded's manual: --help, this package's doc (doc.go,
// generated) and stopbounded(1) are all made from it and the grammar.
var Page = manual.Page{
	Name:    "stopbounded",
	Summary: "Stop processes within a bound.",
	Synopsis: []string{
		"[--grace D] [--signal SIG] [--schedule SCHED] [--group] [--tree] [--within ROOT[@START]] [--name LABEL] [--pidfile F] [--quiet] [--json] TARGET...",
		"--tree --list [--json] ROOT...",
	},
	Body: `stopbounded sends SIG (TERM), waits at most GRACE (5s) for the targets to
be gone, sends KILL, waits at most 5s more, and returns the moment every
target is gone.

A TARGET is PID or PID@START (START is field 22 of /proc/PID/stat; a
process whose START differs is a different process and is never
signalled). Negative PIDs are refused: use --group with a positive id.

--pidfile F reads a small regular file: it is opened without following a
symbolic link or blocking (O_NOFOLLOW|O_NONBLOCK), a FIFO, device or
directory is bad input, and at most 4 KiB is read. As root, a pidfile
owned by a user other than root, or writable by its group or others, is
refused (3): its writer could choose which process root signals.

--tree freezes the tree (SIGSTOP) while it walks and signals it, and never
leaves it frozen: TERM, INT, HUP or QUIT to stopbounded end the stop, continue
every member and exit 128+N; a guardian process, in a session of its own
and re-parented away from stopbounded (so that a --tree stop of
stopbounded's own supervisor neither freezes nor kills it), holds every
frozen member and continues them if stopbounded is SIGKILLed; a guardian
that died is replaced before the next freeze. With fewer free descriptors
than members, members go without a pidfd; a process whose /proc entry
cannot be read for another reason than its exit (EMFILE) is never taken
for gone: stopbounded names the processes it cannot judge and exits 1.

--tree --list ROOT prints the processes --tree would stop now, one per
line as PID@START COMM (control characters in COMM escaped), or with
--json one object each (pid, start, comm, ppid, pgid), and signals
nothing. A ROOT already gone lists nothing (0); a ROOT that --tree
refuses (PID 1, one containing stopbounded) is refused alike (2).

--within ROOT[@START] stops a TARGET only if it is ROOT or a descendant of
ROOT: the ancestry is read while a pidfd holds the TARGET, before anything
is signalled and again right before its first signal, which then goes
through that pidfd. A TARGET outside ROOT's tree (a recycled PID, a
sibling, an orphan re-parented to init) is refused with one line and exit
2, and nothing is signalled; one re-parented out of the tree between that
check and its first signal is refused alike (2) while the other targets
are stopped. Ancestry is the kernel's: a descendant whose parent exited
belongs to its new parent (init, or the nearest child subreaper), so run
a supervisor under reap to keep double-forked workers inside its launch.

--json prints one object per target: target, label, gone, signals (sent),
killed, elapsed_ms, error, and how a single process actually ended:
status (as a shell reports it), exit_code or signal (TERM, or KILL when it
ignored TERM), reaped (false for a zombie its parent has not collected
yet), from the kernel (PIDFD_INFO_EXIT, or the zombie's /proc entry);
null for a group or tree, a target already gone, or where the kernel
cannot say.`,
	Examples: `stopbounded --grace 2 "$helper_pid"
stopbounded --schedule TERM/5/INT/2/KILL/5 --pidfile /run/job.pid
stopbounded --group --name "stall watch for $t" "$pgid"
stopbounded --tree --json "$(watchpid --id "$pid")"
stopbounded --tree --list "$supervisor"
stopbounded --within "$supervisor" "$worker"`,
	Exit: `0 every target is gone; 1 a target survived the schedule; 2 bad input
or a refused target (nothing is signalled); 3 permission denied, an
unsafe pidfile, output that could not be written, or /proc mounted for
another PID namespace (nothing is signalled through it); 128+N when
signal N interrupted a --tree stop.`,
	SeeAlso: []string{"watchpid(1)", "reap(1)", "kill(1)", "pidfd_open(2)"},
}

// Model returns kong's model of stopbounded's command line, as --help
// sees it.
func Model() (*kong.Kong, error) {
	return kongcli.New(Page.Name, Page.Description).Model(&grammar{})
}
