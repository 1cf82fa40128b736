// Package adopt is the adopt tool: an external worker takes durable
// ownership of a handed-off execution, then runs its payload exactly once.
//
// Synopsis:
//
//	adopt [--ledger DIR] [--ack-file F] [--lock-timeout D] ID -- CMD [ARGS...]
//
// adopt moves execution ID from claimed+fenced to running with itself as
// owner. Only once that is durable does it write the ack file (atomically,
// 0600) as {"execution_id","pid","start"}; then it runs CMD once in its own
// process group with TETHER_EXECUTION=ID — CMD's first instruction runs
// only once its PID@START is durable in the record, and never if adopt
// dies first — forwards TERM/INT/HUP/QUIT, and finishes the record:
// completed iff CMD exited 0.
// If adopt is killed mid-run, ledger recover later reports the execution
// unknown — never completed, never run twice.
//
//	id=$(ledger claim nightly --owner $$) && ledger fence "$id"
//	setsid adopt --ack-file /run/nightly.ack "$id" -- ./nightly.sh &
//
// Exit status: CMD's status (128+N for signal N); 125 when adoption was
// refused or failed before CMD ran (CMD did not run, no ack was written),
// among other reasons where /proc belongs to another PID namespace, in
// which adopt cannot identify itself as owner;
// 126/127 when CMD is not executable / not found; 2 for usage errors.
package adopt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tether-sh/tether/lib/spec"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/execution"
	"github.com/tether-sh/tether/lib/handoff"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/proc"
)

const description = `Take durable ownership of a fenced execution, then run its payload once.

Examples:
  id=$(ledger claim nightly --owner $$$$) && ledger fence "$id"
  setsid adopt --ack-file /run/nightly.ack "$id" -- ./nightly.sh &

Exit: CMD's status (128+N for signal N); 125 refused before CMD ran;
126/127 CMD not executable / not found; 2 usage error.`

type grammar struct {
	cli.VersionFlag
	Ledger      cli.Dir              `placeholder:"DIR" help:"Ledger store (default $TETHER_LEDGER, else $XDG_STATE_HOME/tether/ledger)."`
	AckFile     string               `placeholder:"F" help:"Write {\"execution_id\",\"pid\",\"start\"} here once the adoption is durable."`
	Grace       cli.Duration         `default:"5s" placeholder:"D" help:"Wait at most D after TERM before KILL when stopping leftovers."`
	LockTimeout cli.OptionalDuration `name:"lock-timeout" placeholder:"D" help:"Give up (125, CMD not run) when the store's lock is not free within D (default 60s; 0 waits forever); a longer wait than a second is reported on stderr."`
	PIDNS       bool                 `name:"pidns" help:"Run CMD as init of a new PID namespace, with a /proc of its own: nothing it starts survives, even a SIGKILL of adopt (root; CMD gets only the signals it handles)."`
	ID          string               `arg:"" name:"ID" help:"The fenced execution to adopt."`
}

// Main runs adopt with args and returns its exit status.
func Main(args []string) int {
	t := cli.New("adopt", description)
	own, argv, hasCmd := cli.SplitCommand(args)
	var g grammar
	if _, code, done := t.Parse(&g, own); done {
		return code
	}
	if !hasCmd || len(argv) == 0 {
		return t.Fail(errors.New("no command: want adopt ID -- CMD [ARGS...]"), spec.ExitUsage)
	}
	if err := ledger.ValidID(g.ID); err != nil {
		return t.Fail(err, spec.ExitUsage)
	}
	return run(t, &g, argv)
}

func run(t *cli.Tool, g *grammar, argv []string) int {
	// Everything that can fail without side effects is checked before the
	// adoption, so that a refusal leaves the execution fenced for another
	// worker (or for recover) rather than adopted and unacknowledged.
	if g.AckFile != "" {
		if err := checkAckDir(g.AckFile); err != nil {
			return t.Fail(err, spec.ExitNotRun)
		}
	}
	dir := string(g.Ledger)
	if dir == "" {
		d, err := ledger.DefaultDir()
		if err != nil {
			return t.Fail(err, spec.ExitNotRun)
		}
		dir = d
	}
	// An execution to adopt lives in an existing store: never create one.
	if _, err := os.Stat(dir); err != nil {
		return t.Fail(fmt.Errorf("ledger store %s: %w", dir, proc.UnwrapPath(err)), spec.ExitNotRun)
	}
	st, err := ledger.Open(dir, ledger.LockTimeoutFlag(g.LockTimeout.Given, g.LockTimeout.D()), ledger.LockWarn(func(msg string) { t.Warnf("%s", msg) }))
	if err != nil {
		return t.Fail(err, spec.ExitNotRun)
	}
	self := proc.Self()
	owner, err := ledger.LocalOwner(self)
	if err != nil {
		return t.Fail(err, spec.ExitNotRun)
	}
	sigs, stopSignals := execution.CatchSignals()
	defer stopSignals()
	if _, err := st.Adopt(g.ID, owner); err != nil {
		// The store's error already reads "cannot adopt ID: why".
		return t.Fail(err, spec.ExitNotRun)
	}
	if g.AckFile != "" {
		if err := handoff.WriteAck(g.AckFile, g.ID, self); err != nil {
			// We own a running execution but nobody knows: give it up as
			// failed rather than run a payload the dispatcher gave up on.
			code := spec.ExitNotRun
			st.Finish(g.ID, ledger.Failed, &code, ledger.ErrorText("could not write ownership acknowledgement: "+err.Error()))
			return t.Fail(fmt.Errorf("cannot write ack file: %w", err), spec.ExitNotRun)
		}
	}
	return execution.Run(t.Warnf, st, g.ID, execution.Options{Argv: argv, Grace: g.Grace.D(), Signals: sigs, PIDNamespace: g.PIDNS})
}

// checkAckDir fails early when the ack file cannot be written: its
// directory is missing, not a directory or not writable, or the path is a
// directory. A temporary file is created and removed to be sure.
func checkAckDir(path string) error {
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("ack file %s: directory %s: %w", path, dir, proc.UnwrapPath(err))
	}
	if !fi.IsDir() {
		return fmt.Errorf("ack file %s: %s is not a directory", path, dir)
	}
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("ack file %s exists and is not a regular file", path)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".probe*")
	if err != nil {
		return fmt.Errorf("ack file %s: cannot write in %s: %w", path, dir, proc.UnwrapPath(err))
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}
