package reap

import (
	"github.com/alecthomas/kong"

	"github.com/tether-sh/tether/lib/cli/kongcli"
	"github.com/tether-sh/tether/lib/internal/manual"
)

// Page is reap's manual: --help, this package's doc (doc.go, generated)
// and reap(1) are all made from it and the grammar.
var Page = manual.Page{
	Name:     "reap",
	Summary:  "Run a command as a child subreaper and, when it ends, stop and reap everything it left behind.",
	Synopsis: []string{"[--grace D] [--deadline D] [--signal SIG] [--pidns] [--] CMD [ARGS...]"},
	Body: `CMD runs in a new process group with reap as its child subreaper, so
descendants that double-fork or setsid away are re-parented to reap
instead of init. TERM, INT, HUP, QUIT, USR1 and USR2 are forwarded to
CMD's group. When CMD exits, or --deadline passes (CMD's group is then
stopped and the exit is 124), every remaining descendant is stopped with
the bounded schedule (SIG, wait at most GRACE, KILL, wait at most 5s) and
reaped; reap returns the moment nothing it started is left.

Everything after -- is CMD's, untouched. In a crontab, give reap's full
path (cron's PATH is /usr/bin:/bin) or set PATH in the crontab.`,
	Examples: `reap -- ./build.sh
reap --grace 2 --deadline 10m -- make -j8 test
reap --pidns -- ./supervisor.sh    # nothing survives, even a SIGKILL of reap

# in a crontab, full paths: cron's PATH is /usr/bin:/bin
*/5 * * * * /home/me/.local/bin/reap --deadline 4m -- /home/me/bin/sync-job`,
	Exit: `CMD's status (128+N when it died of signal N); 124 when the deadline
stopped it; 125 when reap failed before CMD started (among other reasons
where /proc belongs to another PID namespace, through which reap would
take other processes for CMD's leftovers) or when something survived
even KILL, or for bad usage (as timeout(1) does); 126 when CMD is not
executable; 127 when it is not found.`,
	SeeAlso: []string{"stopbounded(1)", "watchpid(1)", "ledger(1)", "prctl(2)"},
}

// Model returns kong's model of reap's command line, as --help sees it.
func Model() (*kong.Kong, error) {
	return kongcli.New(Page.Name, Page.Description).Model(&grammar{})
}
