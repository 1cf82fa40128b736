// Package reap is the reap tool: run a command as a child subreaper and,
// when it ends, stop and reap everything it left behind.
//
// Synopsis:
//
//	reap [--grace D] [--deadline D] [--signal SIG] -- CMD [ARGS...]
//
// CMD runs in a new process group with reap as its child subreaper, so
// descendants that double-fork or setsid away are re-parented to reap
// instead of init. TERM, INT, HUP, QUIT, USR1 and USR2 are forwarded to
// CMD's group. When CMD exits, or --deadline passes (CMD's group is then
// stopped and the exit is 124), every remaining descendant is stopped with
// the bounded schedule (SIG, wait ≤ GRACE, KILL, wait ≤ 5s) and reaped;
// reap returns the moment nothing it started is left. Examples:
//
//	reap -- ./build.sh
//	reap --grace 2 --deadline 10m -- make -j8 test
//	*/5 * * * * /home/me/.local/bin/reap --deadline 4m -- /home/me/bin/sync-job
//
// Exit status: CMD's (128+N when it died of signal N), 124 when the
// deadline stopped it, 125 when reap failed before CMD started (among
// other reasons where /proc belongs to another PID namespace, through
// which reap would take other processes for CMD's leftovers) or when
// something survived even KILL, 126/127 when CMD cannot be executed / is
// not found, 2 on bad usage.
package reap

import (
	"context"

	"github.com/tether-sh/tether/lib/spec"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/proc"
	"github.com/tether-sh/tether/lib/runner"
)

const description = `Run CMD as a child subreaper; when it ends (or --deadline passes), stop
everything it left behind with a bounded schedule, reap it, and exit with
CMD's status.

Descendants that double-fork or setsid away still come back to reap.
TERM/INT/HUP/QUIT/USR1/USR2 are forwarded to CMD's process group.

Examples:
  reap -- ./build.sh
  reap --grace 2 --deadline 10m -- make -j8 test
  # a crontab line: full paths, cron's PATH is /usr/bin:/bin
  */5 * * * * /home/me/.local/bin/reap --deadline 4m -- /home/me/bin/sync-job
  reap --pidns -- ./supervisor.sh    # nothing survives, even a SIGKILL of reap

Exit: CMD's status (128+N for signal N), 124 deadline, 125 reap failed
before CMD ran or something survived KILL, 126 not executable,
127 not found, 2 usage.`

type grammar struct {
	cli.VersionFlag
	Grace    cli.Duration `default:"5s" placeholder:"D" help:"Wait at most D after SIG before KILL (Go duration or seconds)."`
	Deadline cli.Duration `default:"0" placeholder:"D" help:"Stop CMD's group once it has run D and exit 124 (0: no deadline)."`
	Signal   cli.Signal   `default:"TERM" placeholder:"SIG" help:"First signal of every stop (name or number)."`
	PIDNS    bool         `name:"pidns" help:"Run CMD as init of a new PID namespace, with a /proc of its own: nothing it starts survives, even if reap is SIGKILLed (needs root; CMD gets only the signals it handles)."`
	Cmd      []string     `arg:"" optional:"" name:"CMD" help:"The command to run and its arguments, after --."`
}

// Main runs reap with args (without the program name) and returns its exit code.
func Main(args []string) int {
	t := cli.New("reap", description)
	// Everything after "--" is CMD, untouched; without "--" a command
	// whose arguments look like no flag of reap's still works.
	own, cmd, hasCmd := cli.SplitCommand(args)
	var g grammar
	if _, code, done := t.Parse(&g, own); done {
		return code
	}
	if hasCmd {
		if len(g.Cmd) > 0 {
			t.Warnf("unexpected argument %q before --: usage: reap [--grace D] [--deadline D] [--signal SIG] -- CMD [ARGS...]", g.Cmd[0])
			return spec.ExitUsage
		}
		g.Cmd = cmd
	}
	if len(g.Cmd) == 0 {
		t.Warnf("no command given: usage: reap [--grace D] [--deadline D] [--signal SIG] -- CMD [ARGS...]")
		return spec.ExitUsage
	}
	// Leftovers are found and stopped through /proc: through a foreign
	// one, reap would take other processes for CMD's.
	if err := proc.CheckProcNS(); err != nil {
		return t.Fail(err, spec.ExitNotRun)
	}
	res, err := runner.Run(context.Background(), runner.Options{
		Argv:         g.Cmd,
		Signal:       g.Signal.S(),
		Grace:        g.Grace.D(),
		Deadline:     g.Deadline.D(),
		PIDNamespace: g.PIDNS,
	})
	if err != nil {
		return t.Fail(err, spec.ExitNotRun)
	}
	if res.DeadlineHit {
		t.Warnf("deadline of %v passed; stopped %s", g.Deadline.D(), g.Cmd[0])
	}
	res.Report(t.Warnf)
	return res.Code()
}
