package ledgercmd

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/tether-sh/tether/lib/cmd/internal/sibling"
	"github.com/tether-sh/tether/lib/cmd/internal/store"
	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/internal/argv"
	"github.com/tether-sh/tether/lib/ledger/location"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/proc"
)

// grammar is the command line: global flags, then one subcommand.
type grammar struct {
	Ledger cli.Location `name:"ledger" placeholder:"DIR|URL" help:"Store directory, or a postgres:// URL naming a PostgreSQL database (default: $TETHER_LEDGER, else $XDG_STATE_HOME/tether/ledger, else ~/.local/state/tether/ledger)."`
	JSON   bool         `name:"json" help:"Print records as JSON, one object per line; every key present, null when unknown."`

	LockTimeout cli.OptionalDuration `name:"lock-timeout" placeholder:"D" help:"Give up (exit 3, nothing changed; under run and spawn 125, CMD not run) when the store's lock is not free within D (default 60s; 0 waits forever). A wait longer than a second is reported on stderr, naming the holder."`
	cli.VersionFlag
	commands
}

// commands holds one field per subcommand. Each subcommand lives in its
// own file; a new subcommand is a new file plus one field here (and its
// Help in help.go).
type commands struct {
	Claim   claimCmd   `cmd:"" help:"Record a new execution of JOB and print its id."`
	Fence   fenceCmd   `cmd:"" help:"Mark a claim as handed off (claimed → claimed+fenced)."`
	Adopt   adoptCmd   `cmd:"" help:"Take over a fenced claim (claimed+fenced → running)."`
	Start   startCmd   `cmd:"" help:"Start a claim in-process (claimed → running)."`
	Finish  finishCmd  `cmd:"" help:"Record the result (running → completed|failed, claimed → failed)."`
	Beat    beatCmd    `cmd:"" help:"Record that a claimed or running execution is alive, with an optional note (refused once it ended)."`
	Recover recoverCmd `cmd:"" help:"Mark executions whose owner is gone abandoned (never started) or unknown (started)."`
	Show    showCmd    `cmd:"" help:"Print one execution."`
	Latest  latestCmd  `cmd:"" help:"Print the newest execution of JOB."`
	List    listCmd    `cmd:"" help:"Print executions, oldest first."`
	Prune   pruneCmd   `cmd:"" help:"Delete terminal records (never claimed or running ones)."`
	Run     runCmd     `cmd:"" help:"Claim, start, run CMD, finish with its status: the cron one-liner."`
	Spawn   spawnCmd   `cmd:"" help:"Claim, fence and hand CMD to a detached adopt worker that survives this caller."`
	Output  outputCmd  `cmd:"" help:"Print the output kept of an execution (the tail of its stdout and stderr)."`
	Status  statusCmd  `cmd:"" help:"Print each job's latest status, when it finished and how long it ran, its last success and its live runs."`
	Check   checkCmd   `cmd:"" help:"Judge JOB as a monitoring plugin: OK, WARNING, CRITICAL or UNKNOWN (exit 0-3), with perfdata."`
	Metrics metricsCmd `cmd:"" help:"Print every job's metrics in the Prometheus text format (tether_*), or write them to a file for node_exporter."`
	Verify  verifyCmd  `cmd:"" help:"Cross-check the store (or one JOB) and print one line per problem: exit 0 clean, 1 problems; --repair mends what the logs say."`
}

// Grammar returns a new zero grammar, for kong's model of it
// (lib/cmd/ledgercmd/ledgerkong).
func Grammar() any { return new(grammar) }

// invocation is one parsed command line, what every subcommand's Run
// receives: the tool, the global flags and the arguments as given.
type invocation struct {
	tool *cli.Tool
	g    *grammar
	args []string // the command line, as given (cli.CommandArgv)
}

// open opens the store named by --ledger or the defaults.
func (inv *invocation) open() (ledger.Ledger, error) { return inv.openWith(location.Options{}) }

// openWith opens the store named by --ledger or the defaults with o (a
// lease, read only); the lock's bound comes from the flags. The router
// (run) made sure that this program serves it.
func (inv *invocation) openWith(o location.Options) (ledger.Ledger, error) {
	loc, err := inv.location()
	if err != nil {
		return nil, err
	}
	o.LockTimeout, o.LockTimeoutGiven = inv.g.LockTimeout.D(), inv.g.LockTimeout.Given
	o.Clock = testNow
	return store.Open(inv.tool, loc, o)
}

// location is the store --ledger or the defaults name.
func (inv *invocation) location() (string, error) { return location.Resolve(string(inv.g.Ledger)) }

// Main runs ledger with args (without the program name) and returns its
// exit code. Before any subcommand runs and any signal is caught, the
// router (run) decides which program serves the command line: this one,
// or tether-pg (one exec, the same PID, "tether-pg ledger ARGS") for a
// PostgreSQL store, whose driver this package does not link. --help,
// --version and a shell's completion are answered here, from tables
// generated from kong's model (explain_gen.go), and so are the usage
// errors (usage.go), whatever TETHER_NO_SHORTCUTS says: the generated
// parser is this binary's only parser, and it reads every command line as
// kong's model does (a path's ~, a cluster of short flags, a value that is
// not UTF-8, a command after "--" included), so that no command line is
// handed to another program to be parsed or explained, and no verb pays
// for kong at start-up. MainWith, with kong's model linked (tether-pg,
// lib.Tools), parses with kong what the shortcut declines.
func Main(args []string) int { return MainWith(args, nil) }

// Explainer parses a command line with kong's model into g, a *grammar
// (lib/cmd/ledgercmd/ledgerkong.Explain is one): it prints help, a usage
// error or a shell's completions and reports done with the exit code, or
// returns the command kong selected.
type Explainer func(t *cli.Tool, g any, args []string) (cmd Runner, code int, done bool)

// Runner is a command kong selected: a *kong.Context. Its Run calls the
// subcommand's Run with the invocation.
type Runner interface{ Run(bindings ...any) error }

// MainWith is Main with explain parsing the command lines the generated
// parser does not take; nil answers them from the tables alone, as Main
// does.
func MainWith(args []string, explain Explainer) int {
	t := cli.New("ledger", nil)
	return t.Done(run(t, args, explain))
}

// RunsCommand reports whether the command line args selects run or spawn,
// the subcommands that run a command: their usage errors exit 125, not 2
// (kongcli.Tool.RunsCommand).
func RunsCommand(args []string) bool {
	switch subcommand(args) {
	case "run", "spawn":
		return true
	}
	return false
}

// subcommand is the subcommand a command line names: the first of its
// ownWords that is the name of a subcommand (a mistyped flag's value
// before it is passed over), or "" when there is none.
func subcommand(args []string) string {
	for _, w := range ownWords(args) {
		for _, c := range argvGrammar().Children {
			if c.Name == w {
				return w
			}
		}
	}
	return ""
}

// ownWords are the arguments before a first "--" that are neither flags
// nor the values of ledger's own flags (--ledger DIR).
func ownWords(args []string) []string {
	takesValue := map[string]bool{}
	for _, f := range argvGrammar().Flags {
		for _, n := range f.Names {
			takesValue["--"+n] = !f.Switch
		}
	}
	var words []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			return words
		case strings.HasPrefix(a, "-") && a != "-":
			if takesValue[a] {
				i++
			}
		default:
			words = append(words, a)
		}
	}
	return words
}

func run(t *cli.Tool, args []string, explain Explainer) int {
	if code, done := t.LoneVersion(args); done {
		return code
	}
	if explain == nil {
		// Answered here, whatever the store: a shell completing (which
		// passes the command's name as the first argument, never a
		// command line to route), and --help.
		if cli.Completing() {
			return complete(t)
		}
		if code, done := help(t, args); done {
			return code
		}
	}
	if cmd, g, ok := fastParse(args, explain); ok {
		if code, done := route(t, g, args); done {
			return code
		}
		return result(t, cmd.Run(g, &invocation{tool: t, g: g, args: args}))
	}
	if explain == nil {
		if sibling.HandedBack(args, "ledger") {
			return handedBack(t, args)
		}
		if code, ok := refuse(t, args); ok {
			return code
		}
		return unexplained(t, args)
	}
	var g grammar
	cmd, code, done := explain(t, &g, args)
	if done {
		if code == exit.Usage && checkUsage(args) {
			return checkUsageUnknown(t)
		}
		return code
	}
	if code, done := route(t, &g, args); done {
		return code
	}
	return result(t, cmd.Run(&invocation{tool: t, g: &g, args: args}))
}

// route is the router: with args parsed into g, and before any
// subcommand runs or any signal is caught, it hands the command line to
// the program that serves the store it names, if not this one
// (store.Route). done reports that it could not, with the exit code:
// 125 for run and spawn (CMD did not run), else 3, which check says as a
// monitoring plugin does (UNKNOWN on stdout), as for any store it cannot
// read. A location that cannot be resolved is left to the subcommand to
// report.
func route(t *cli.Tool, g *grammar, args []string) (code int, done bool) {
	loc, err := location.Resolve(string(g.Ledger))
	if err != nil {
		return 0, false
	}
	if err := store.Route("ledger", loc, args); err != nil {
		if subcommand(args) == "check" {
			return result(t, checkReport(t.Stdout, checkUnknown, "cannot read the store: "+oneLine(err.Error()), "")), true
		}
		if RunsCommand(args) {
			return t.Fail(err, exit.NotRun), true
		}
		return t.Fail(err, store.ExitCode(err)), true
	}
	return 0, false
}

// unexplained refuses args, a command line that neither the generated
// parser takes nor its usage errors word, in one line with the exit code
// of a usage error. No line of ledger's grammar is one: its tables leave
// nothing to kong (TestLedgerTablesComplete, in lib/cmd/tetherdoc) and
// answer as kong does (TestExplainMatchesKong, FuzzExplain); this is the
// answer should they ever fall short, rather than another program's.
func unexplained(t *cli.Tool, args []string) int {
	t.Warnf("cannot parse this command line (see %s --help)", t.Name)
	return usageCode(t, args)
}

// handedBack refuses a command line handed to tether-pg (see
// sibling.HandedBack) in one line, with the exit code the handing tool
// gives when tether-pg cannot be run: ledger's router hands tether-pg a
// line its parser takes, for a PostgreSQL store (3, or 125 for run and
// spawn); a line it does not take (typed by hand after "tether-pg
// ledger") exits as a usage error (2, 125 for run and spawn, UNKNOWN for
// check).
func handedBack(t *cli.Tool, args []string) int {
	t.Warnf("%v", sibling.ErrHandedBack)
	rest := args[1:]
	var g grammar
	_, parses := argv.Parse(argvGrammar(), &g, rest)
	switch {
	case RunsCommand(rest):
		return exit.NotRun
	case parses:
		return exit.System
	case checkUsage(rest):
		return checkUsageUnknown(t)
	}
	return exit.Usage
}

// refuse answers args, a command line the generated parser does not take,
// as kong's model would: a usage error, or --help or --version given with
// other arguments. ok is false when the tables cannot tell what kong says.
func refuse(t *cli.Tool, args []string) (code int, ok bool) {
	r, ok := answer(args)
	if !ok {
		return 0, false
	}
	return say(t, r, args), true
}

// say prints kong's reply r to args (answer) and returns the exit code.
func say(t *cli.Tool, r reply, args []string) int {
	switch {
	case r.version:
		// A lost write is t.Stdout's to report: t.Done makes it 3.
		fmt.Fprintln(t.Stdout, cli.VersionText(t.Name))
		return t.Done(exit.OK)
	case r.asked:
		text, ok := helpText(strings.Join(r.help, " "))
		if !ok {
			return unexplained(t, args)
		}
		if _, err := fmt.Fprint(t.Stdout, text); err != nil {
			return t.Fail(err, exit.System)
		}
		return t.Done(exit.OK)
	}
	t.Warnf("%s", r.usage)
	return usageCode(t, args)
}

// usageCode is the exit code of a usage error in args, as kongcli picks
// it: 125 for run and spawn, UNKNOWN for check (said on stdout), else 2.
func usageCode(t *cli.Tool, args []string) int {
	switch {
	case checkUsage(args):
		return checkUsageUnknown(t)
	case RunsCommand(args):
		return exit.NotRun
	}
	return exit.Usage
}

// checkUsageUnknown is a monitoring plugin's usage error: UNKNOWN, on
// stdout where the monitoring system reads it.
// A lost line is said here: t.Done takes a 3 for one already said.
func checkUsageUnknown(t *cli.Tool) int {
	if _, err := fmt.Fprintln(t.Stdout, "UNKNOWN: bad usage of ledger check (see ledger check --help)"); err != nil {
		t.Warnf("%v", err)
	}
	return int(checkUnknown)
}

// result reports a subcommand's error, if any, and returns the exit code.
func result(t *cli.Tool, err error) int {
	if err != nil {
		// A command run by `ledger run` or `spawn --wait` ended with this
		// status; it has said whatever it had to say.
		var status exitStatus
		if errors.As(err, &status) {
			return int(status)
		}
		// Several unreadable records: one line each.
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, one := range j.Unwrap() {
				t.Warnf("%v", one)
			}
			return exitCode(err)
		}
		return t.Fail(err, exitCode(err))
	}
	return exit.OK
}

// exitCode maps lib/ledger's sentinels to the exit codes of CONTRACT.md §2.
func exitCode(err error) int { return store.ExitCode(err) }

// ownerFlag is a --owner PID[@START] value.
type ownerFlag struct {
	set bool
	id  proc.ID
}

// UnmarshalText implements encoding.TextUnmarshaler for kong.
func (o *ownerFlag) UnmarshalText(b []byte) error {
	id, err := proc.ParseID(string(b))
	if err != nil {
		return err
	}
	o.set, o.id = true, id
	return nil
}

// resolve returns the owner named by --owner, or else the caller's parent:
// the shell or program that ran ledger, which is what must stay alive.
func (o ownerFlag) resolve() (ledger.Owner, error) {
	id := o.id
	if !o.set {
		id = proc.ID{PID: os.Getppid()}
	}
	owner, err := ledger.LocalOwner(id)
	if err != nil && !o.set && !errors.Is(err, proc.ErrForeignProc) {
		return ledger.Owner{}, fmt.Errorf("cannot identify the calling process: %w", err)
	}
	return owner, err
}

// instantFlag is an --instant T value (RFC 3339 or unix seconds), in UTC.
type instantFlag struct{ t time.Time }

// UnmarshalText implements encoding.TextUnmarshaler for kong.
func (f *instantFlag) UnmarshalText(b []byte) error {
	t, err := ledger.ParseInstant(string(b))
	if err != nil {
		return err
	}
	f.t = t
	return nil
}
