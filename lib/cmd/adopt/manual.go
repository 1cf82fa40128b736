package adopt

import (
	"github.com/alecthomas/kong"

	"github.com/tether-sh/tether/lib/cli/kongcli"
	"github.com/tether-sh/tether/lib/internal/manual"
)

// Page is adopt's manual: --help, this package's doc (doc.go, generated)
// and adopt(1) are all made from it and the grammar.
var Page = manual.Page{
	Name:     "adopt",
	Summary:  "Take durable ownership of a fenced execution, then run its payload exactly once.",
	Synopsis: []string{"[--ledger DIR|URL] [--ack-file F] [--grace D] [--lease D] [--lock-timeout D] [--pidns] [--keep-output SIZE] [--keep N] [--retry N [--retry-delay D]] ID [--] CMD [ARGS...]"},
	Body: `adopt is the external worker of a hand-off: it moves execution ID from
claimed+fenced to running with itself as owner. Only once that is durable
does it write the ack file (atomically, 0600) as
{"execution_id","pid","start"}; then it runs CMD once in its own process
group with TETHER_EXECUTION=ID and TETHER_FENCE_TOKEN, the execution's
fencing token (ledger show ID --field token). CMD's first instruction runs only once its
PID@START is durable in the record, and never if adopt dies first. adopt
forwards TERM, INT, HUP and QUIT to CMD's group, stops what CMD left in it
(TERM, --grace, KILL), and finishes the record: completed iff CMD exited 0.
CMD's stdout and stderr reach adopt's own, and their last --keep-output
bytes are kept with the execution (ledger output ID), as ledger run does;
once the record is finished, the job is pruned to its newest --keep.

If adopt is killed mid-run, ledger recover later reports the execution
unknown: never completed, never run twice. ledger spawn starts adopt for
you; run it yourself to hand a claim to a worker of your own. Without
--ledger, the store is the one spawn handed over in
$TETHER_HANDOFF_LEDGER, which CMD's environment does not carry, else
$TETHER_LEDGER, else the default folder.`,
	Examples: `id=$(ledger claim nightly --owner $$) && ledger fence "$id"
setsid adopt --ack-file /run/nightly.ack "$id" -- ./nightly.sh &`,
	Exit: `CMD's status (128+N when it died of signal N); 125 when the adoption was
refused or failed before CMD ran (CMD did not run, no ack was written),
among other reasons where /proc belongs to another PID namespace, in
which adopt cannot identify itself as owner, or for bad usage (as
timeout(1) does); 126 when CMD is not executable; 127 when it is not found;
3 instead of CMD's 0 to 3 when CMD's output could not be passed on (a
full disk: one line says so; the record keeps CMD's status), or when
CMD's result could not be recorded (a full or read-only file system, a
store gone: one line says so; recover later calls the run unknown); 3
whatever CMD's status when another host took the execution over (its
lease ran out: CMD is stopped at once, its result kept as late).`,
	SeeAlso: []string{"ledger(1)", "reap(1)"},
}

// Model returns kong's model of adopt's command line, as --help sees it.
func Model() (*kong.Kong, error) {
	return kongcli.New(Page.Name, Page.Description).Model(&grammar{})
}
