package ledgerkong

import "github.com/tether-sh/tether/lib/internal/manual"

// Page is ledger's manual: --help, this package's doc (doc.go, generated)
// and ledger(1) are all made from it and the grammar.
var Page = manual.Page{
	Name:    "ledger",
	Summary: "Durable execution ledger: claim, fence, adopt, start and finish executions of jobs, crash-safely, with one winner per claim.",
	Synopsis: []string{
		"[--ledger DIR] [--json] [--lock-timeout D] COMMAND [ARGS...]",
		"run JOB [--instant T] [--exclusive [--wait D]] [--every D] [--retry N [--retry-delay D]] [--deadline D] [--grace D] [--pidns] [--keep-output SIZE] [--quiet] [--conflict-exit N] [--keep N] -- CMD [ARGS...]",
		"spawn JOB [--instant T] [--retry N [--retry-delay D]] [--scope auto|require|never] [--wait] [--log F] [--keep-output SIZE] [--keep N] -- CMD [ARGS...]",
		"output ID",
	},
	Body: `ledger records that a job was claimed, handed off, started and finished,
in plain files under one flock (see the Go package lib/ledger/filestore),
so that a job runs at most once per claim and a run whose owner vanished
is reported honestly:

  claimed ──fence──▶ claimed+fenced ──adopt──▶ running ──finish──▶ completed | failed
  claimed ──start──▶ running;  claimed ──finish──▶ failed
  owner gone: claimed ──recover──▶ abandoned, running ──recover──▶ unknown

Every transition is a compare-and-swap under the store's lock: of any
number of racing claimers of one job and instant, or adopters of one
claim, exactly one wins; the others are refused (1). Terminal records are
never rewritten.

The store is --ledger DIR, else $TETHER_LEDGER, else
$XDG_STATE_HOME/tether/ledger, else ~/.local/state/tether/ledger. Under
cron, HOME and PATH are cron's, not your login shell's: name the store and
the program explicitly in a crontab (see EXAMPLES).

--ledger postgres://... (or postgresql://, or libpq's key=value form such
as 'host=/run/postgresql dbname=jobs' or 'service=jobs', or TETHER_LEDGER
set to one) names a PostgreSQL database instead, shared by every host that
names it: the same subcommands, output and exit codes, with libpq's
conventions (PGHOST, PGUSER, PGPASSWORD, ~/.pgpass, PGSSLMODE, a
unix-socket host; connect_timeout and statement_timeout, in milliseconds,
in the URL bound the waits). Any other NAME: (postgres:/jobs with one
slash, postgres:jobs) is bad input (2), and so is a relative folder for a
subcommand that writes: it would be another store in every working
directory. The first claim creates the schema tether. An owner on another
host is judged by its lease alone, on the server's clock: run, spawn's
worker and adopt renew one (--lease D, default 30s); claim --lease D gives
the split path one, which beat renews; without a lease such an owner is
judged only on its own host. recover --host NAME declares a host dead for
good. A finish refused because recover judged first keeps its result on
the record ("late" in --json). A database that cannot be reached is 3
(125 for run and spawn: CMD did not run), and a payload never starts
without its record; a password never shows.

A runner fences itself: with --lease L and --grace G, it renews every
(L - G - 0.5s)/3, each try bounded by as much (one that must connect
first, by when the lease is given up, below) and made on a fresh
connection after a failure; when its lease was last renewed at t (the
moment the renewal was sent: the server's lease runs until t + L or
later; on CLOCK_BOOTTIME, which counts through a suspend), it stops CMD's
process group (TERM, G, KILL) by t + L - L/100 - G - 0.5s (L/100 for a
clock running slower than the server's), so that CMD is gone before the
lease runs out and another host may judge it; the record then says failed
(or, if recover judged first, keeps the result as late). A runner that
was paused past that moment (SIGSTOP, a frozen VM, a suspend) tries one
renewal first and runs on if it succeeds; one whose renewal finds the
execution recovered by another stops CMD at once, keeps its result as
late and exits 3. L must be at least 2 × (G + 0.5s) (default grace 5s: 11s),
else run, spawn and adopt refuse it (2). A claim whose answer is lost (the
database stalled or the link cut mid-claim) is settled before the runner
gives up: written failed, over the claim or in its place, so that no claim
outlives the tool that gave up on it and the slot can be retried.

An owner is a process, recorded as host, boot id, PID namespace and
PID@START (START is field 22 of /proc/PID/stat): recover judges a PID only
on the same boot and in the same PID namespace, and a different START is a
different process. claim, adopt and recover refuse to judge through a
/proc mounted for another PID namespace (3).

Records print as one line of text each, or with --json as one JSON object
a line with every key present (null when unknown); --field F prints one
field (a --json key; owner.pid, child.start... for nested ones).

status, check and metrics judge a job by the schedule its newest run was
claimed under (run or spawn with --schedule or --every): the slot due
next, and whether the job is late (that slot passed by more than --grace
with no execution for it); status shows a strip of its newest 16 runs,
check needs no --max-age, metrics labels each sample tether_job="JOB".`,
	Examples: `id=$(ledger claim backup --owner $$ --instant "$(date -u +%FT%TZ)") || exit 0
ledger start "$id"
backup.sh; rc=$?               # meanwhile: ledger beat "$id" --note "step 2 of 5"
ledger finish "$id" --status $([ $rc = 0 ] && echo completed || echo failed) --exit-code $rc
ledger recover                  # dead owners: never started → abandoned, started → unknown
ledger latest backup --field status
ledger list --job backup --json

# the cron one-liner: at most once per 5-minute slot, stopped after 4m
ledger run report --instant $(( $(date +%s) / 300 * 300 )) --deadline 4m -- report.sh
# hand off to a detached worker that survives this caller; prints ID WORKER_PID
ledger spawn nightly --instant "$(date -u +%F)T00:00:00Z" -- ./nightly.sh

# the same crontab line on two hosts, one database: each slot runs once
# (rounded to the nearest slot, so a clock a second behind names the same one)
ledger --ledger 'postgres:///jobs?host=/run/postgresql' run report --instant $(( ($(date +%s) + 150) / 300 * 300 )) -- report.sh

# in a crontab: cron's PATH and HOME are not yours
PATH=/home/me/.local/bin:/usr/bin:/bin
TETHER_LEDGER=/home/me/.local/state/tether/ledger
*/5 * * * * ledger run report --quiet --instant $(( $(date +\%s) / 300 * 300 )) --deadline 4m -- report.sh
# why did it fail? its output's last 64KiB are kept
ledger output "$(ledger latest report --field id)"
# one HTML page of every job: its newest runs, their durations, its latest failure's output
ledger report --html /var/www/jobs.html`,
	Exit: `0 done; 1 refused (a lost race, a taken instant, a wrong state) or no
such execution; 2 bad input; 3 system error (permission, I/O, a corrupt or
unsafe store, the store's lock not free within --lock-timeout, output that
could not be written; claim, adopt and recover where /proc is another PID
namespace's). run and spawn exit with their command's status instead, and
125 when it did not run, a usage error of theirs included: see their
sections.`,
	SeeAlso: []string{"adopt(1)", "reap(1)", "watchpid(1)", "stopbounded(1)", "flock(2)"},
}
