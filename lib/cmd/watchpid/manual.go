package watchpid

import (
	"github.com/alecthomas/kong"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/internal/manual"
)

// Page is watchpid's manual: --help, this package's doc (doc.go,
// generated) and watchpid(1) are all made from it and the grammar.
var Page = manual.Page{
	Name:    "watchpid",
	Summary: "Exit the moment a process is gone, or run a command that must not outlive it.",
	Synopsis: []string{
		"[--timeout D] [--any] [--quiet] TARGET...",
		"[--any] [--grace D] [--timeout D] [--quiet] TARGET... -- CMD [ARGS...]",
		"--id [--json] PID...",
	},
	Body: `TARGET is PID, PID@START (START is field 22 of /proc/PID/stat; a
different START means the process is already gone), or --parent for the
caller's parent. Waiting is event-driven through pidfd, so watchpid
returns within milliseconds of the death.

With CMD, watchpid runs CMD in its own process group and, when the target
is gone (or --timeout passes), stops that group within a bound (TERM,
--grace, KILL), so a helper started as

  watchpid --parent -- stall-watch "$job" &

never outlives its wrapper, even when the wrapper is SIGKILLed.

--id prints PID@START for each PID, a token every tether tool accepts as a
TARGET or owner; it refuses a thread id (1).`,
	Examples: `watchpid "$pid"                              # wait until pid is gone
watchpid --timeout 30s "$pid" || echo still running
watchpid --parent -- stall-watch "$job" &    # helper dies with its wrapper
token=$(watchpid --id "$pid")                # PID@START for later use`,
	Exit: `Without CMD: 0 gone; 124 --timeout expired; 1 with --id, a PID that
does not exist or is a thread; 2 bad input; 3 system error (among them a
/proc mounted for another PID namespace, through which watchpid judges no
process). With CMD: 0 when the target went and CMD was stopped; CMD's own
status when CMD ended first; 124 when --timeout stopped CMD; 128+N after
forwarding signal N; 125 when CMD could not be started or stopped (or was
not started: a foreign /proc); 126 when CMD is not executable; 127 when it
is not found.`,
	SeeAlso: []string{"stopbounded(1)", "reap(1)", "pidfd_open(2)"},
}

// Model returns kong's model of watchpid's command line, as --help sees
// it.
func Model() (*kong.Kong, error) {
	return cli.New(Page.Name, Page.Description()).Model(&grammar{})
}
