package watchpid

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/syntax"

	"github.com/alecthomas/kong"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/cli/kongcli"
	"github.com/tether-sh/tether/lib/proc"
)

// exitStatusUnknown is watchpid --status's exit code when the target's
// status cannot be known: 128+65, past the last signal (64), so no death by
// signal reads as it, and no tether tool or shell convention uses it. (3,
// 125 or 255 would read as a real and common exit of the target.)
const exitStatusUnknown = 193

type grammar struct {
	cli.VersionFlag
	Timeout string       `placeholder:"D" help:"Give up after D and exit 124 (Go duration or seconds); with CMD, stop CMD first."`
	Any     bool         `help:"Done when any target is gone, not all."`
	Grace   cli.Duration `default:"5s" placeholder:"D" help:"With CMD: wait at most D after TERM before KILL."`
	Quiet   bool         `short:"q" help:"Print nothing but errors: the exit status says gone (0) or timed out (124), as in a loop that waits one idle period at a time."`
	Parent  bool         `help:"Watch the caller's parent process."`
	ID      bool         `name:"id" help:"Print PID@START for each PID and exit (1 if one does not exist, has exited (a zombie) or is a thread)."`
	Status  bool         `help:"Exit with TARGET's own status once it is gone (N, or 128+SIG); 193 when the kernel cannot tell."`
	JSON    bool         `name:"json" help:"Print one JSON object per PID (--id) or per target as it goes (pid, id, gone, status, exit_code, signal, reaped)."`
	Targets targets      `arg:"" optional:"" name:"TARGET" help:"PID or PID@START, one or more."`
	Cmd     []string     `arg:"" optional:"" passthrough:"partial" name:"CMD" help:"Run CMD while the targets live: from the first argument that is neither a flag nor a TARGET (or after --) on, everything is CMD's."`
}

// targets are the TARGET arguments: as many as read as PID or PID@START,
// so that CMD starts at the first argument that does not (watchpid PID ls
// -d / runs ls -d /, as ledger run J ls -d / does). A named type, since
// kong lets no argument follow a []string one.
type targets []string

// Decode implements kong.MapperValue.
func (ts *targets) Decode(ctx *kong.DecodeContext) error {
	for _, tok := range ctx.Scan.PopWhile(func(tok kong.Token) bool { return tok.IsValue() && isTarget(tok.String()) }) {
		*ts = append(*ts, tok.String())
	}
	return nil
}

func isTarget(s string) bool {
	_, err := proc.ParseID(s)
	return err == nil
}

// runsCommand reports whether a command line asks watchpid to run CMD:
// then its usage errors are 125 (cli.Tool.RunsCommand). It does with a
// "--", or with a word that is not a target after a target or --parent;
// a first word that is not a target is a bad target (watchpid abc).
func runsCommand(ctx *kong.Context, args []string) bool {
	if slices.Contains(args, "--") {
		return true
	}
	if ctx == nil {
		return false
	}
	words, _ := kongcli.Words(ctx.Kong, args)
	i := slices.IndexFunc(words, func(w string) bool { return !isTarget(w) })
	return i > 0 || i == 0 && slices.ContainsFunc(args, func(a string) bool { return a == "--parent" || strings.HasPrefix(a, "--parent=") })
}

// Main runs watchpid with args and returns its exit status.
func Main(args []string) int {
	t := kongcli.New("watchpid", Page.Description)
	return t.Done(main(t, args))
}

func main(t *kongcli.Tool, args []string) int {
	t.RunsCommand = runsCommand
	var g grammar
	// kong's model is built only for what the generated parser leaves
	// to it: help, errors, completion.
	if _, ok := cli.FastParse(argvGrammar, &g, args); !ok {
		if _, code, done := t.Parse(&g, args); done {
			return code
		}
	}
	if len(g.Cmd) > 0 && len(g.Targets) == 0 && !g.Parent && !slices.Contains(args, "--") {
		// watchpid abc: a mistyped target, not a command without one.
		_, err := proc.ParseID(g.Cmd[0])
		return t.Fail(err, exit.Usage)
	}
	hasCmd := len(g.Cmd) > 0
	cmd := cli.CommandArgv(args, g.Cmd)
	// From here on, a usage error with CMD is a runner's: 125.
	usage := exit.Usage
	if hasCmd {
		usage = exit.NotRun
	}
	if hasCmd && len(cmd) == 0 {
		return t.Fail(errors.New("no command after --"), usage)
	}
	if g.ID {
		switch {
		case g.Status:
			return t.Fail(errors.New("--id and --status cannot be combined: --id prints, --status waits"), usage)
		case hasCmd || g.Parent:
			return t.Fail(errors.New("--id takes PIDs only"), usage)
		}
		return printIDs(t.Tool, &g)
	}
	if g.Status {
		if hasCmd {
			return t.Fail(errors.New("--status cannot be combined with -- CMD"), usage)
		}
		if n := len(g.Targets) + boolInt(g.Parent); n != 1 {
			return t.Fail(fmt.Errorf("--status takes exactly one target, not %d", n), usage)
		}
	}
	var timeout time.Duration = -1
	if g.Timeout != "" {
		d, err := syntax.ParseDuration(g.Timeout)
		if err != nil {
			return t.Fail(fmt.Errorf("--timeout: %w", err), usage)
		}
		timeout = d
	}
	// Every target is judged through /proc: a foreign one would name
	// other processes. With CMD, that is a failure before CMD started.
	if err := proc.CheckProcNS(); err != nil {
		if hasCmd {
			return t.Fail(err, exit.NotRun)
		}
		return t.Fail(err, exit.System)
	}
	// Where the status is wanted, a zombie target is held too: it is
	// gone, but its status is still there to read.
	targets, err := resolve(&g, !hasCmd && (g.Status || g.JSON))
	defer func() {
		for _, w := range targets {
			if w.h != nil {
				w.h.Close()
			}
		}
	}()
	if err != nil {
		return t.Fail(err, usage)
	}
	if hasCmd {
		return runCommand(t.Tool, &g, targets, cmd, timeout)
	}
	return wait(t.Tool, &g, targets, timeout)
}

// watched is one target: h is nil when it was already gone.
type watched struct {
	pid int
	h   *proc.Handle
}

func (w watched) label() string { return fmt.Sprintf("pid %d", w.pid) }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func resolve(g *grammar, holdZombies bool) ([]watched, error) {
	var ids []proc.ID
	var parentGone []watched
	if g.Parent {
		ppid := os.Getppid()
		if ppid <= 1 {
			// Our parent already died and we were re-parented to init:
			// there is no parent left to watch, it is gone.
			parentGone = append(parentGone, watched{pid: ppid})
		} else {
			ids = append(ids, proc.ID{PID: ppid})
		}
	}
	for _, a := range g.Targets {
		id, err := proc.ParseID(a)
		if err != nil {
			return nil, err
		}
		if id.PID == os.Getpid() {
			return nil, fmt.Errorf("%w: pid %d is watchpid itself", proc.ErrBadID, id.PID)
		}
		ids = append(ids, id)
	}
	if len(ids)+len(parentGone) == 0 {
		return nil, errors.New("no target given (want PID, PID@START or --parent)")
	}
	open := proc.Open
	if holdZombies {
		open = proc.OpenUnreaped
	}
	out := append(make([]watched, 0, len(ids)+1), parentGone...)
	for _, id := range ids {
		w := watched{pid: id.PID}
		h, err := open(id)
		switch {
		case err == nil:
			w.h = h
		case errors.Is(err, proc.ErrGone):
		default:
			return out, err
		}
		out = append(out, w)
	}
	return out, nil
}
