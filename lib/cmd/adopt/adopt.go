package adopt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/tether-sh/tether/lib/cmd/internal/sibling"
	"github.com/tether-sh/tether/lib/cmd/internal/store"
	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/ledger/location"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/cli/kongcli"
	"github.com/tether-sh/tether/lib/execution"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/proc"
)

type grammar struct {
	cli.VersionFlag
	Ledger      cli.Location         `placeholder:"DIR|URL" help:"Ledger store: a directory or a postgres:// URL (default $TETHER_LEDGER, else $XDG_STATE_HOME/tether/ledger)."`
	Lease       cli.Duration         `default:"30s" placeholder:"D" help:"PostgreSQL store: the worker's lease, renewed on the server's clock while CMD runs; recover on another host judges it gone only once it ran out. A worker that cannot renew it stops CMD before it runs out; D must be at least 2 × (grace + 0.5s)."`
	AckFile     string               `placeholder:"F" help:"Write {\"execution_id\",\"pid\",\"start\"} here once the adoption is durable."`
	Grace       cli.Duration         `default:"5s" placeholder:"D" help:"Wait at most D after TERM before KILL when stopping leftovers."`
	LockTimeout cli.OptionalDuration `name:"lock-timeout" placeholder:"D" help:"Give up (125, CMD not run) when the store's lock is not free within D (default 60s; 0 waits forever); a longer wait than a second is reported on stderr."`
	KeepOutput  cli.Size             `name:"keep-output" default:"64KiB" placeholder:"SIZE" help:"Keep the last SIZE bytes of CMD's stdout and stderr with the execution, one combined stream, as they are written (ledger output ID prints them); both still reach adopt's own unchanged. 0 keeps nothing. A stream that is a terminal is left to CMD and not kept. SIZE is bytes or K, M, G (1K = 1024)."`
	Keep        int                  `default:"1000" placeholder:"N" help:"Retention: once the result is recorded, prune the terminal executions of the job beyond its newest N (0 keeps every one)."`
	Retry       int                  `placeholder:"N" help:"When CMD fails (a non-zero exit, or a signal adopt did not forward), run it again up to N more times, each attempt a new execution of the job claimed by adopt with the adopted one's instant, source and schedule (attempt k of N+1), after a delay as --retry-delay says: ledger spawn --retry hands it over. The exit status is the last attempt's."`
	RetryDelay  cli.Duration         `name:"retry-delay" default:"10s" placeholder:"D" help:"With --retry: after failed attempt k, wait D times 2^(k-1), at most 10 times D, with equal jitter, before the next attempt."`
	RetryExcl   bool                 `name:"retry-exclusive" hidden:"" help:"With --retry: a later attempt is claimed as --exclusive (spawn's)."`
	RetryEvery  cli.Duration         `name:"retry-every" hidden:"" placeholder:"D" help:"With --retry: a later attempt is claimed with --every D (spawn's)."`
	PIDNS       bool                 `name:"pidns" help:"Run CMD as init of a new PID namespace, with a /proc of its own: nothing it starts survives, even a SIGKILL of adopt (root; CMD gets only the signals it handles)."`
	ID          string               `arg:"" name:"ID" help:"The fenced execution to adopt."`
	Cmd         []string             `arg:"" optional:"" passthrough:"partial" name:"CMD" help:"The command and its arguments: from the first argument after ID that is not one of adopt's flags (or after --) on, everything is CMD's."`
}

// Main runs adopt with args and returns its exit status.
func Main(args []string) int {
	t := kongcli.New("adopt", Page.Description)
	// A shell completing passes the command's name first ("adopt adopt
	// CUR PREV"): that is no command line handed back.
	if !cli.Completing() && sibling.HandedBack(args, "ledger", "adopt") {
		// Started as tether-pg, which this is not: never hand on again.
		return t.Fail(sibling.ErrHandedBack, exit.NotRun)
	}
	// adopt always runs a command: its usage errors are 125, as timeout's.
	t.RunsCommand = func(*kong.Context, []string) bool { return true }
	var g grammar
	// kong's model is built only for what the generated parser leaves
	// to it: help, errors, completion.
	if _, ok := cli.FastParse(argvGrammar, &g, args); !ok {
		if _, code, done := t.Parse(&g, args); done {
			return code
		}
	}
	// The router, as ledger's: before anything is checked, caught or
	// opened, the program that serves the store runs this command line.
	dir, err := location.ResolveHandedOff(string(g.Ledger))
	if err != nil {
		return t.Fail(err, exit.NotRun)
	}
	if err := store.Route("adopt", dir, args); err != nil {
		return t.Fail(err, exit.NotRun)
	}
	argv := cli.CommandArgv(args, g.Cmd)
	if len(argv) == 0 {
		return t.Fail(errors.New("no command: want adopt ID [--] CMD [ARGS...]"), exit.NotRun)
	}
	if err := ledger.ValidID(g.ID); err != nil {
		return t.Fail(err, exit.NotRun)
	}
	return run(t.Tool, &g, dir, argv)
}

// run adopts the execution in the store at dir and runs argv.
func run(t *cli.Tool, g *grammar, dir string, argv []string) int {
	// Everything that can fail without side effects is checked before the
	// adoption, so that a refusal leaves the execution fenced for another
	// worker (or for recover) rather than adopted and unacknowledged.
	if g.AckFile != "" {
		if err := checkAckDir(g.AckFile); err != nil {
			return t.Fail(err, exit.NotRun)
		}
	}
	if err := location.Check(dir, true); err != nil {
		return t.Fail(err, exit.Usage)
	}
	if err := location.CheckLeaseAt(dir, g.Lease.D(), g.Grace.D()); err != nil {
		return t.Fail(errors.New(strings.TrimPrefix(err.Error(), ledger.ErrBadInput.Error()+": ")), exit.Usage)
	}
	// An execution to adopt lives in an existing store: never create one.
	if err := location.Exists(dir); err != nil {
		return t.Fail(fmt.Errorf("ledger store %s: %w", location.Redact(dir), proc.UnwrapPath(err)), exit.NotRun)
	}
	st, err := store.Open(t, dir, location.Options{Lease: g.Lease.D(), LockTimeout: g.LockTimeout.D(), LockTimeoutGiven: g.LockTimeout.Given})
	if err != nil {
		return t.Fail(err, store.NotRun(err))
	}
	defer st.Close()
	if g.Keep < 0 {
		// A runner's usage error: 125, as the others.
		return t.Fail(fmt.Errorf("--keep %d: want 0 (keep every execution) or more", g.Keep), exit.NotRun)
	}
	if g.Retry < 0 || g.Retry >= ledger.MaxAttempts || g.RetryDelay.D() <= 0 || g.RetryEvery.D() < 0 {
		return t.Fail(fmt.Errorf("--retry %d --retry-delay %v: want 0 to %d retries and a positive delay", g.Retry, g.RetryDelay.D(), ledger.MaxAttempts-1), exit.NotRun)
	}
	out := execution.Adopt(t.Warnf, st, execution.AdoptOptions{ID: g.ID, AckFile: g.AckFile, Options: execution.Options{
		Argv: argv, Grace: g.Grace.D(), PIDNamespace: g.PIDNS, KeepOutput: g.KeepOutput.N(), Keep: g.Keep,
	}, Retry: execution.Retry{Retries: g.Retry, Delay: g.RetryDelay.D()},
		Claim: execution.Claim{Exclusive: g.RetryExcl, Every: g.RetryEvery.D()}})
	if out.Err != nil {
		return t.Fail(out.Err, out.Code)
	}
	return out.Code
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
