package ledgercmd

// Each subcommand's detail for its --help, the man page and the package
// doc: kong calls Help on every command node (kong.HelpProvider). The text
// is in lib/internal/manual's markup and is not interpolated: $ is $. It
// starts with a sentence: kong trims the first line's indentation.

func (*claimCmd) Help() string {
	return `Prints the new execution's id (or its record with --json). Refused (1)
when --instant names a slot JOB already holds, or with --exclusive while
JOB has a live claimed or running execution. When the id cannot be
printed (a full disk, a closed pipe), the claim is withdrawn (it ends
failed) and ledger exits 3 with a line naming it.

  id=$(ledger claim backup --owner $$ --instant "$(date -u +%FT%TZ)") || exit 0`
}

func (*fenceCmd) Help() string {
	return `A fenced claim waits for an adopter (adopt(1), ledger adopt); recover
leaves it alone for its --grace after the fence.

  ledger fence "$id" && setsid adopt "$id" -- ./nightly.sh &`
}

func (*adoptCmd) Help() string {
	return `Of racing adopters exactly one wins; the others are refused (1).

  ledger adopt "$id" --owner $$`
}

func (*startCmd) Help() string {
	return `Refused (1) unless the execution is claimed (not fenced); the owner stays
the claimer unless --owner names another process.

  ledger start "$id"`
}

func (*finishCmd) Help() string {
	return `Refused (1) for a terminal record, a fenced claim (its adopter finishes
it), or --status completed of a claim that never started.

  ledger finish "$id" --status failed --exit-code 3 --error "disk full"`
}

func (*beatCmd) Help() string {
	return `Records the time (beat_at) and, with --note, a progress note on a claimed,
claimed+fenced or running execution, in one durable compare-and-swap
update; show and --json display both. Refused (1) once the execution is
terminal, or with --if-latest when its job has a newer execution: a
watcher then knows its attempt is no longer the current one.

  ledger beat "$TETHER_EXECUTION" --note "step 2 of 5"
  ledger beat "$id" --note stalled:idle --if-latest || exit 0   # a newer attempt took over`
}

func (*holdsCmd) Help() string {
	return `The fencing verifier: exits 0, printing nothing (the record with --json),
while execution ID still holds its job: it is claimed or running, no later
claim of its job was given a greater fencing token, its lease (PostgreSQL)
has not run out by the database's clock, and its owner, where this host can
judge it by its PID, is alive. Exits 1 with one line saying why once it does
not (ended, superseded by a newer token, lease run out, owner gone), and 3
when it cannot tell (the store cannot be read or reached). It only reads,
in one statement on PostgreSQL. A payload calls it before a write that
matters; a resource that can compare tokens should also be given
TETHER_FENCE_TOKEN, since an answer is already old when it arrives.

  ledger holds "$TETHER_EXECUTION" && mv report.tmp report`
}

func (*recoverCmd) Help() string {
	return `Prints how many executions it changed (the records with --json). An owner
is dead when its PID@START is gone on this boot; an owner on another host,
or in another PID namespace, is left alone.

  ledger recover
  ledger recover --grace 2m --json`
}

func (*showCmd) Help() string {
	return `Exit 1 when there is no such execution.

  ledger show "$id"
  ledger show "$id" --field owner.pid`
}

func (*latestCmd) Help() string {
	return `Exit 1 when JOB has no execution.

  ledger latest backup --field status`
}

func (*listCmd) Help() string {
	return `Records that cannot be read are reported on stderr, one line each (exit
3), after the others are printed.

  ledger list --job backup --status failed
  ledger list --json --field id`
}

func (*pruneCmd) Help() string {
	return `Say which records go: --keep N, --older-than D, or --all for every
terminal record (a bare prune is a usage error, 2); with --keep and
--older-than, only those that are both beyond the newest N and older
than D.
Prints how many records it deleted (the records with --json). One
that fails (3) counts only what it deleted before: a job whose records
could not be rewritten (a full disk) keeps them all. A pruned completed
or unknown record still holds its instant: that slot is never claimable
again.

  ledger prune --keep 10
  ledger prune --older-than 720h`
}

func (*runCmd) Help() string {
	return `Claims JOB with ledger run as owner, runs CMD in its own process group
with TETHER_EXECUTION set to the id and TETHER_FENCE_TOKEN to its fencing
token (CMD's first instruction runs only once its PID@START is durable in
the record, and the claim that made it gave the token), forwards TERM, INT, HUP,
QUIT, USR1 and USR2 to it, and finishes the record: completed iff CMD
exited 0. Leftovers of CMD's group are stopped (TERM, --grace, KILL).
ledger run never detaches: killing it kills the run, and recover later
reports it unknown.

Output: CMD's stdout and stderr reach ledger run's own unchanged, and the
last --keep-output bytes (default 64KiB) of both, as one stream, are kept
with the execution as they are written (ledger output ID), so what CMD
wrote before a SIGKILL of ledger run is kept. CMD writes to a pipe of
ledger run's, not to the caller's file: one pipe for both streams when
they are one file (2>&1, cron), which keeps their order exact; else the
kept stream interleaves them in the order read. A stream that is a
terminal is left to CMD (its terminal, its job control) and not kept,
unless --quiet. A reader of ledger run's output that goes away (EPIPE)
closes CMD's pipe too: CMD gets SIGPIPE, as without ledger. Once CMD and
its leftovers are gone, a pipe still held by another process is read for
1s more, then let go.

--quiet makes it a cron job's chronic: silent when CMD succeeds or when
the run is refused as expected; when CMD fails, its output (held, the
last --keep-output but at least 64KiB of each stream) and the notices
held back follow. Faults of ledger itself are said whatever --quiet says.

--retry N runs CMD again when it failed (a non-zero exit, or a signal
ledger did not forward), up to N more times: each attempt is its own
execution of JOB, the same instant (slot) and source, recorded as
attempt k of N+1 with its own exit and kept output. After failed attempt
k it waits --retry-delay D (default 10s) times 2^(k-1), at most 10 times D,
with equal jitter (between half of that and all of it), then claims
again; each retried failure says one line (JOB: attempt 1 of 3 failed
(exit 1); retrying in 7.3s). Not retried: the deadline, a fault of
ledger, CMD not runnable, a signal ledger forwarded, a refusal. A later
attempt is not refused by the run's own failed ones, but is by another
run that took the slot or the job meanwhile (--instant, --schedule,
--exclusive, --every), which ends the run with its last attempt's
status. --deadline bounds all attempts together, from the first claim:
each gets what is left, and a delay that would end past it is not
waited. With --quiet, nothing is printed unless the last attempt failed:
then its output, the notices held back and how many attempts failed. A
TERM or INT during a delay ends the run at once (128+N). ledger list
shows each attempt as k/N (ATTEMPT), and ledger show of one lists the
attempts of its run.

--schedule EXPR names the slot of a cron expression the run stands for
(at or before now, or up to 10s after it) and records the schedule: a
slot runs at most once, failed included, and a tick more than a minute
after its slot is not due; --catch-up runs the newest slot that has no
execution however old (after downtime; never a backlog). DST as cronie.
--every D runs at most once per period, counted from the last success's
start: an hourly line with --every 1d runs daily and catches up after a
host was down, as anacron. --jitter D waits a delay below D, stable per
host and job, before the claim. --exclusive --wait D waits for the live
run instead of being refused. Every finished run prunes its job to the
newest --keep executions (default 1000), so that a frequent job does not
grow the store forever.

  ledger run report --schedule '*/5 * * * *' --deadline 4m -- report.sh
  ledger run nightly --schedule '0 2 * * *' --tz Europe/Berlin --catch-up --quiet --conflict-exit 0 -- nightly.sh   # every minute in cron
  ledger run backup --exclusive -- backup.sh
  ledger run daily --every 1d --quiet --conflict-exit 0 -- daily.sh   # hourly in cron
  ledger run sync --exclusive --wait 10m -- sync.sh
  ledger run upload --schedule '0 * * * *' --retry 3 --retry-delay 30s --deadline 50m --quiet -- upload.sh
  ledger output "$(ledger latest report --field id)"

Exit status: CMD's own; 124 when --deadline stopped it; 125 when CMD did
not run: the claim was refused (the instant or slot was taken, the slot
not due, --exclusive found a live run, --every found it not due), or the store or its database
could not be opened, reached or written; with --conflict-exit N an
expected refusal exits N instead, and a fault still 125; 126 when CMD is
not executable; 127 when it is not found; 128+N when CMD died of signal
N, or when signal N ended --wait or reached ledger run before CMD was
recorded; 125 too for bad usage, as timeout(1) says (nothing recorded,
nothing run), so that it is never mistaken for CMD's own 2; 3 instead of
CMD's 0 to 3 when CMD's output could not be passed on (a full disk: one
line says so; the record keeps CMD's status), or when CMD's result could
not be recorded (a full or read-only file system, a store gone: one line
says so; recover later calls the run unknown); 3 whatever CMD's status
when another host took the execution over (its lease ran out: CMD is
stopped at once, its result kept as late). With --retry, CMD's is the
last attempt's status, and a signal during a delay exits 128+N.`
}

func (*spawnCmd) Help() string {
	return `Claims and fences JOB, starts adopt(1) detached (in a systemd-run --user
--scope when it works, so a restart of this caller's service does not take
it down), waits for its acknowledgement, and prints "ID WORKER_PID". The
worker runs CMD once and finishes the record.

The worker keeps CMD's output (--keep-output, ledger output ID) and prunes
JOB to its newest --keep executions (default 1000) once it finished.

--retry N and --retry-delay D go to the worker, which retries as ledger
run does (see ledger run --help): the spawned execution is attempt 1 of
N+1; the worker claims each later one itself, for the same instant and
source, as --exclusive and --every say; --wait exits with the last
attempt's status.

  ledger spawn nightly --instant "$(date -u +%F)T00:00:00Z" -- ./nightly.sh
  ledger spawn sync --wait --log /var/log/sync.log -- ./sync.sh

Exit status: 0 when the worker took the execution; 125 when CMD will not
run (the claim was refused: --conflict-exit N makes that N; adopt was
not found, the worker did not take it within --ack-timeout; the record
ends failed), bad usage included (nothing recorded); 3 when the worker
took it but its id could not be printed. With --wait: CMD's
recorded status (with --retry, the last attempt's) (124, 126, 127 and 128+N as for run), 1 when it failed
without one, 125 when it ended abandoned (never started), 255 when it
ended unknown, 128+N when signal N ended the waiting.`
}

func (*verifyCmd) Help() string {
	return `Reads the whole store (or JOB alone) without the lock and checks each
file against the others, as bbolt's check does: each job's log (every
frame valid, one header, each execution claimed once and of this job;
a torn tail, an append cut short by a crash, is normal and not
reported), its index of finished executions (_ids) and its cached
summary (_summary) against the log, each @INSTANT slot (it names an
execution of the log holding that instant, or is a tombstone) and that
every execution with an instant has one, each link in active/ (it names a
live execution's newest frame in its own job) and that every live
execution has one, each output (of an execution the store holds), and
names that are not the store's. It prints one line per problem,
"JOB: what is wrong; repair: what --repair does" (or "cannot repair:
why"), then a summary line, always: exit 0 clean, 1 problems found, 3
the store cannot be read. A group member, or root as the owner, may
check, as with status. On a busy store a line may be a write seen half
done: run it again to confirm.

With --repair it holds the store's lock (the owner only: anyone else is
refused) and mends each problem, saying "repaired:" for each change: a
log whose structure is wrong (doubled, another job's copied in, damage
between valid frames) is written anew with each execution of its job
once, as its newest version (as prune does); indexes, summaries and
links are rebuilt from the logs; a slot whose execution the log no
longer holds becomes a tombstone, taken for good (it may have run),
never free. A record lost from a log cut short stays lost: restore the
log from a backup to have it back. Exit 0 once everything was mended, 1
while something is left (a stray file, a log whose header is damaged).
On PostgreSQL it checks the rows (names, the times of each state, pruned
rows); there is nothing to rebuild, so --repair changes nothing.

  ledger verify || ledger verify --repair`
}
