package reap

import (
	"context"

	"github.com/alecthomas/kong"

	"github.com/tether-sh/tether/lib/exit"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/cli/kongcli"
	"github.com/tether-sh/tether/lib/proc"
	"github.com/tether-sh/tether/lib/runner"
	"github.com/tether-sh/tether/lib/stop"
)

type grammar struct {
	cli.VersionFlag
	Grace    cli.Duration `default:"5s" placeholder:"D" help:"Wait at most D after SIG before KILL (Go duration or seconds)."`
	Deadline cli.Duration `default:"0" placeholder:"D" help:"Stop CMD's group once it has run D and exit 124 (default 0: no deadline)."`
	Signal   cli.Signal   `default:"TERM" placeholder:"SIG" help:"First signal of every stop (name or number; 0 sends none: KILL follows the grace, as timeout -s0 -k)."`
	PIDNS    bool         `name:"pidns" help:"Run CMD as init of a new PID namespace, with a /proc of its own: nothing it starts survives, even if reap is SIGKILLed (needs root; CMD gets only the signals it handles)."`
	Cmd      []string     `arg:"" optional:"" passthrough:"partial" name:"CMD" help:"The command and its arguments: from the first argument that is not one of reap's flags (or after --) on, everything is CMD's."`
}

// Main runs reap with args (without the program name) and returns its exit code.
func Main(args []string) int {
	t := kongcli.New("reap", Page.Description)
	// reap always runs a command: its usage errors are 125, as timeout's.
	t.RunsCommand = func(*kong.Context, []string) bool { return true }
	// CMD starts at "--" or at the first argument that is not a flag of
	// reap's (or a flag's value): everything from there on is CMD's.
	var g grammar
	// kong's model is built only for what the generated parser leaves
	// to it: help, errors, completion.
	if _, ok := cli.FastParse(argvGrammar, &g, args); !ok {
		if _, code, done := t.Parse(&g, args); done {
			return code
		}
	}
	g.Cmd = cli.CommandArgv(args, g.Cmd)
	if len(g.Cmd) == 0 {
		t.Warnf("no command given: usage: reap [--grace D] [--deadline D] [--signal SIG] [--] CMD [ARGS...]")
		return exit.NotRun
	}
	// Leftovers are found and stopped through /proc: through a foreign
	// one, reap would take other processes for CMD's.
	if err := proc.CheckProcNS(); err != nil {
		return t.Fail(err, exit.NotRun)
	}
	o := runner.Options{
		Argv:         g.Cmd,
		Signal:       g.Signal.S(),
		Grace:        g.Grace.D(),
		Deadline:     g.Deadline.D(),
		PIDNamespace: g.PIDNS,
	}
	if o.Signal == 0 {
		// --signal 0, where the runner's zero means its default, TERM:
		// nothing is sent, KILL follows the grace (timeout -s0 -k G D).
		o.Schedule = stop.Default(0, o.Grace)
	}
	res, err := runner.Run(context.Background(), o)
	if err != nil {
		return t.Fail(err, exit.NotRun)
	}
	if res.DeadlineHit {
		t.Warnf("deadline of %v passed; stopped %s", g.Deadline.D(), g.Cmd[0])
	}
	res.Report(t.Warnf)
	return res.Code()
}
