package watchpid

import (
	"github.com/alecthomas/kong"

	"github.com/tether-sh/tether/lib/cli/kongcli"
	"github.com/tether-sh/tether/lib/internal/manual"
)

// Page is watchpid's manual: --help, this package's doc (doc.go,
// generated) and watchpid(1) are all made from it and the grammar.
var Page = manual.Page{
	Name:    "watchpid",
	Summary: "Exit the moment a process is gone, or run a command that must not outlive it.",
	Synopsis: []string{
		"[--timeout D] [--any] [--quiet] [--json] TARGET...",
		"--status [--timeout D] [--quiet] [--json] TARGET",
		"[--any] [--grace D] [--timeout D] [--quiet] TARGET... [--] CMD [ARGS...]",
		"--id [--json] PID...",
	},
	Body: `TARGET is PID, PID@START (START is field 22 of /proc/PID/stat; a
different START means the process is already gone), or --parent for the
caller's parent. Waiting is event-driven through pidfd, so watchpid
returns within milliseconds of the death.

With several TARGETs watchpid waits until every one is gone, as pidwait(1)
does (--any: until the first is), whatever their order and however many
were gone already; --timeout exits 124 while any still runs, naming each
that does (with CMD: stops CMD, 124).

With CMD, watchpid runs CMD in its own process group and, when the target
is gone (or --timeout passes), stops that group within a bound (TERM,
--grace, KILL), so a helper started as

  watchpid --parent -- stall-watch "$job" &

never outlives its wrapper, even when the wrapper is SIGKILLed. watchpid
is CMD's child subreaper: what CMD leaves behind when it is stopped or
ends, even outside its process group (setsid, double fork), is stopped
within the same bound and reaped.

--status waits for its one TARGET, which need not be the caller's child,
and exits with the target's own status as a shell would report it: N when
it exited N, 128+N when signal N killed it, with the line "pid P exited N"
or "pid P was killed by SIG". The status comes from the kernel through the
pidfd watchpid holds: PIDFD_INFO_EXIT (Linux 6.15 or later) once the
target's parent has reaped it, the zombie's /proc/PID/stat before that.
watchpid returns at the death, as always: a zombie is gone ("reaped":false
in --json). Where the status cannot be known, watchpid exits 193 and says
why in one line: a kernel without PIDFD_INFO_EXIT, a target already gone
before watchpid held a pidfd on it, or another user's zombie (the kernel
hides its status until it is reaped). 193 is 128+65, one past the last
signal: no death by signal reads as 193, no tether tool or shell
convention uses it, and it is never 0; a target that exits 193 by itself
is told apart by the message line and --json's exit_code.

--json (without CMD) prints one object per target as it goes, then one for
each target still running when watchpid returns:

  {"pid":42,"id":"42@98765","gone":true,"status":3,"exit_code":3,"signal":null,"reaped":false}

id is null for a target gone before watchpid held it; status is the
shell's number for how it ended; exit_code is set when it exited, signal
(a name, "KILL") when a signal killed it; reaped is false for a zombie
nobody has collected yet. Each is null where it is not known.

--id prints PID@START for each PID, a token every tether tool accepts as a
TARGET or owner; it refuses a thread id (1).`,
	Examples: `watchpid "$pid"                              # wait until pid is gone
watchpid --timeout 30s "$pid" || echo still running
watchpid --parent -- stall-watch "$job" &    # helper dies with its wrapper
token=$(watchpid --id "$pid")                # PID@START for later use
watchpid --status "$pid"; echo "it ended $?" # a sibling's exit status`,
	Exit: `Without CMD: 0 gone; 124 --timeout expired; 1 with --id, a PID that
does not exist, has exited (a zombie) or is a thread; 2 bad input; 3
system error (among them a /proc mounted for another PID namespace,
through which watchpid judges no process); with --status, TARGET's own
status, or 193 when it cannot be known. With CMD: 0 when the target went and CMD was stopped; CMD's own
status when CMD ended first; 124 when --timeout stopped CMD; 128+N after
forwarding signal N; 125 when CMD could not be started or stopped (or was
not started: a foreign /proc, bad usage); 126 when CMD is not executable; 127 when it
is not found.`,
	SeeAlso: []string{"stopbounded(1)", "reap(1)", "pidfd_open(2)"},
}

// Model returns kong's model of watchpid's command line, as --help sees
// it.
func Model() (*kong.Kong, error) {
	return kongcli.New(Page.Name, Page.Description).Model(&grammar{})
}
