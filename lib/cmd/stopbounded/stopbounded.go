package stopbounded

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/syntax"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/cli/kongcli"
	"github.com/tether-sh/tether/lib/internal/sigdefault"
	"github.com/tether-sh/tether/lib/proc"
	"github.com/tether-sh/tether/lib/stop"
)

type grammar struct {
	cli.VersionFlag
	Grace    cli.Duration `default:"5s" placeholder:"D" help:"Wait at most D after SIG before KILL (Go duration or seconds)."`
	Signal   cli.Signal   `default:"TERM" placeholder:"SIG" help:"First signal to send (name or number; 0 sends none: only the wait, then KILL)."`
	Schedule schedule     `placeholder:"SCHED" help:"Full schedule SIG/WAIT[/SIG/WAIT...], e.g. TERM/5/KILL/5; overrides --signal and --grace."`
	Group    bool         `help:"Each TARGET is a process group id; done when no member is left."`
	Tree     bool         `help:"Stop each TARGET and all its descendants, wherever they moved."`
	List     bool         `help:"With --tree: print the members --tree would stop (PID@START COMM), signal nothing."`
	Within   string       `placeholder:"ROOT[@START]" help:"Stop a TARGET only if it is ROOT or a descendant of ROOT; refuse any other."`
	Name     string       `placeholder:"LABEL" help:"Name the target in messages instead of \"pid N\"."`
	Pidfile  []string     `type:"path" placeholder:"F" help:"Read a target from file F, a small regular file (repeatable)."`
	Quiet    bool         `short:"q" help:"Print nothing on success or escalation."`
	JSON     bool         `name:"json" help:"Print one JSON object per target on stdout."`
	Targets  []string     `arg:"" optional:"" name:"TARGET" help:"PID or PID@START (or a process group id with --group)."`
}

// valueFlags are the flags whose value is the next argument: a "-1" there
// is a (bad) value for kong to refuse, not a target.
var valueFlags = map[string]bool{"--grace": true, "--signal": true, "--schedule": true, "--name": true, "--pidfile": true, "--within": true}

// negativeArg reports "-1", "-42": a user trying kill(2)'s negative PIDs.
func negativeArg(a string) bool {
	if len(a) < 2 || a[0] != '-' {
		return false
	}
	for i := 1; i < len(a); i++ {
		if a[i] < '0' || a[i] > '9' {
			return false
		}
	}
	return true
}

// Main runs stopbounded with args and returns its exit status.
func Main(args []string) int {
	t := kongcli.New("stopbounded", Page.Description)
	return t.Done(main(t, args))
}

func main(t *kongcli.Tool, args []string) int {
	for i, a := range args {
		if a == "--" {
			break
		}
		if negativeArg(a) && (i == 0 || !valueFlags[args[i-1]]) {
			t.Warnf("refusing target %s: negative PIDs name process groups or every process; use --group with a positive id", a)
			return exit.Usage
		}
	}
	var g grammar
	// kong's model is built only for what the generated parser leaves
	// to it: help, errors, completion.
	if _, ok := cli.FastParse(argvGrammar, &g, args); !ok {
		if _, code, done := t.Parse(&g, args); done {
			return code
		}
	}
	return run(t.Tool, &g)
}

// schedule is a --schedule value. Parsing it as kong reads the flag means
// an empty value (an unset variable in a wrapper) is bad input rather than
// the default schedule.
type schedule struct {
	s   stop.Schedule
	set bool
}

// UnmarshalText implements encoding.TextUnmarshaler for kong.
func (v *schedule) UnmarshalText(b []byte) error {
	s, err := stop.ParseSchedule(string(b))
	if err != nil {
		return err
	}
	v.s, v.set = s, true
	return nil
}

// target pairs an engine target with how the user named it.
type target struct {
	stop.Target
	arg string
}

func run(t *cli.Tool, g *grammar) int {
	sched := stop.Default(g.Signal.S(), g.Grace.D())
	if g.Schedule.set {
		sched = g.Schedule.s
	}
	root, err := within(g)
	if err != nil {
		return t.Fail(err, exit.Usage)
	}
	// Targets are identified through /proc: a foreign one would name
	// other processes (and --tree would freeze them).
	if err := proc.CheckProcNS(); err != nil {
		return t.Fail(err, exit.System)
	}
	if root, err = pin(root); err != nil {
		return t.Fail(err, exit.System)
	}
	var guard *stop.ThawGuard
	if g.Tree && !g.List {
		// A --tree is frozen while it is walked: never leave it so. A
		// TERM, INT, HUP or QUIT ends the stop and continues the tree before
		// stopbounded exits (see below); a guardian continues it if
		// stopbounded is killed. It starts while the targets are checked.
		if guard, err = stop.StartThawGuard(); err != nil {
			return t.Fail(fmt.Errorf("cannot stop a tree safely: %w", err), exit.System)
		}
		defer guard.Done()
	}
	args, code, err := targetArgs(g)
	if err != nil {
		return t.Fail(err, code)
	}
	if g.List {
		return list(t, g, args)
	}
	// Validate every target before signalling any.
	targets, err := resolve(g, root, args)
	defer func() {
		for _, tg := range targets {
			if c, ok := tg.Target.(interface{ Close() error }); ok {
				c.Close()
			}
		}
	}()
	if err != nil {
		return t.Fail(err, exit.Usage)
	}
	engineTargets := make([]stop.Target, len(targets))
	var trees []*stop.Tree
	for i, tg := range targets {
		engineTargets[i] = tg.Target
		if tr, ok := tg.Target.(*stop.Tree); ok {
			trees = append(trees, tr)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var caught atomic.Value // the signal that interrupted a --tree stop
	// Signals it does not handle end it as they end a C tool (QUIT, USR1…).
	others := sigdefault.Signals
	if len(trees) > 0 {
		// A --tree stop ends on TERM, INT, HUP or QUIT with every member
		// continued.
		others = slices.DeleteFunc(slices.Clone(others), func(s syscall.Signal) bool { return s == unix.SIGQUIT })
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT)
		defer signal.Stop(sigs)
		for _, tr := range trees {
			tr.Guard = guard
		}
		go func() {
			select {
			case sig := <-sigs:
				caught.Store(sig)
				for _, tr := range trees {
					tr.Interrupt()
				}
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	sigdefault.AsC(others...)
	outcomes := stop.Run(ctx, engineTargets, sched)
	if sig, ok := caught.Load().(os.Signal); ok {
		for _, tr := range trees {
			tr.Thaw()
		}
		s := sig.(unix.Signal)
		t.Warnf("interrupted by %s before every target was gone; no member is left stopped", syntax.SignalName(s))
		return exit.ForSignal(s)
	}
	return report(t, g, targets, outcomes)
}

// within checks how the selection flags combine and returns --within's
// ROOT (nil without it); its errors are usage errors.
func within(g *grammar) (*proc.ID, error) {
	if g.Group && g.Tree {
		return nil, errors.New("--group and --tree cannot be combined")
	}
	if g.List && !g.Tree {
		return nil, errors.New("--list needs --tree")
	}
	if g.Within == "" {
		return nil, nil
	}
	if g.Group || g.Tree {
		return nil, errors.New("--within cannot be combined with --group or --tree")
	}
	id, err := proc.ParseID(g.Within)
	if err != nil {
		return nil, fmt.Errorf("--within: %w", err)
	}
	return &id, nil
}

// pin returns root pinned to the process that holds its PID now, if root
// was given without a start time: a ROOT that exits and whose PID is
// recycled must not adopt a new tree. A gone ROOT gets goneStart.
func pin(root *proc.ID) (*proc.ID, error) {
	if root == nil || root.Start != 0 {
		return root, nil
	}
	id, err := proc.Lookup(root.PID)
	if err != nil && !errors.Is(err, proc.ErrGone) {
		return nil, err
	}
	if err == nil {
		return &id, nil
	}
	root.Start = goneStart
	return root, nil
}

// targetArgs is the targets given, in the operands and then the pidfiles;
// on error, code is the exit code for it.
func targetArgs(g *grammar) (args []string, code int, err error) {
	args = append([]string(nil), g.Targets...)
	for _, f := range g.Pidfile {
		a, err := readPidfile(f)
		if err != nil {
			return nil, pidfileExit(err), err
		}
		args = append(args, a)
	}
	if len(args) == 0 {
		return nil, exit.Usage, errors.New("no target given (want PID, PID@START or --pidfile F)")
	}
	return args, 0, nil
}

// goneStart stands for the START of a --within ROOT that was already gone:
// no process has it, so nothing is found inside that tree.
const goneStart = 1<<62 + 1

func resolve(g *grammar, root *proc.ID, args []string) ([]target, error) {
	var out []target
	for _, a := range args {
		id, err := proc.ParseID(a)
		if err != nil {
			return out, err
		}
		switch {
		case g.Group:
			if id.Start != 0 {
				return out, fmt.Errorf("%w %q: --group takes a plain process group id", proc.ErrBadID, a)
			}
			if err := proc.CheckGroup(id.PID); err != nil {
				return out, err
			}
			out = append(out, target{&stop.Group{PGID: id.PID, Name: g.Name}, a})
		case g.Tree:
			tr, err := newTree(id, g.Name)
			if err != nil {
				return out, err
			}
			out = append(out, target{tr, a})
		case root != nil:
			if err := proc.CheckTarget(id.PID); err != nil {
				return out, err
			}
			w, err := stop.NewWithin(*root, id, g.Name)
			if err != nil {
				return out, err
			}
			out = append(out, target{w, a})
		default:
			if err := proc.CheckTarget(id.PID); err != nil {
				return out, err
			}
			p, err := stop.NewProcess(id, g.Name)
			if err != nil {
				return out, err
			}
			out = append(out, target{p, a})
		}
	}
	return out, nil
}

// result is the --json form of one target's outcome. Status, ExitCode,
// Signal and Reaped say how a single process actually ended, as the
// kernel tells it through the pidfd held since before the first signal
// (proc.Handle.ExitInfo): null for a group or tree, for a target already
// gone, and where the kernel cannot say.
type result struct {
	Target    string   `json:"target"`
	Label     string   `json:"label"`
	Gone      bool     `json:"gone"`
	Signals   []string `json:"signals"`
	Killed    bool     `json:"killed"`
	ElapsedMS float64  `json:"elapsed_ms"`
	Error     *string  `json:"error"`
	proc.ExitJSON
}

// setExit fills r's exit fields for a process target that is gone.
func (r *result) setExit(tg stop.Target) {
	p, ok := tg.(*stop.Process)
	if !ok || p.H == nil || !r.Gone {
		return
	}
	info, err := p.H.ExitInfo()
	if err != nil {
		return
	}
	r.ExitJSON = info.JSON()
}

func report(t *cli.Tool, g *grammar, targets []target, outcomes []stop.Outcome) int {
	code := exit.OK
	enc := json.NewEncoder(t.Stdout)
	for i, o := range outcomes {
		label := o.Target.Label()
		killed, last := o.Killed()
		switch {
		case o.Err != nil && errors.Is(o.Err, proc.ErrOutside):
			// Re-parented out of ROOT's tree between the check and the
			// first signal: refused, and never signalled.
			t.Warnf("%v", o.Err)
			code = max(code, exit.Usage)
		case o.Err != nil && errors.Is(o.Err, proc.ErrPermission):
			t.Warnf("cannot signal %s: permission denied", label)
			code = max(code, exit.System)
		case o.Err != nil:
			t.Warnf("cannot signal %s: %v", label, o.Err)
			code = max(code, exit.System)
		case !o.Gone:
			t.Warnf("%s survived %s", label, sentList(o))
			code = max(code, exit.Refused)
			if tr, ok := o.Target.(*stop.Tree); ok {
				// Not seen is not gone: name what /proc could not show.
				if ids, why := tr.Unjudged(); why != nil && len(ids) == 0 {
					t.Warnf("%s: cannot judge what is left: %v", label, why)
				} else if why != nil {
					t.Warnf("%s: cannot judge whether %d %s (%s): %v", label, len(ids),
						plural(len(ids), "process runs", "processes run"), listIDs(ids), proc.UnwrapPath(why))
				}
			}
		case killed && !g.Quiet && last == 0:
			t.Warnf("%s did not end by itself; killed", label)
		case killed && !g.Quiet:
			t.Warnf("%s ignored %s; killed", label, syntax.SignalName(last))
		}
		if g.JSON {
			r := result{Target: targets[i].arg, Label: label, Gone: o.Gone, Killed: killed,
				Signals: []string{}, ElapsedMS: float64(o.Elapsed.Microseconds()) / 1000}
			for _, s := range o.Sent {
				r.Signals = append(r.Signals, syntax.SignalName(s))
			}
			if o.Err != nil {
				msg := o.Err.Error()
				r.Error = &msg
			}
			r.setExit(targets[i].Target)
			enc.Encode(r)
		}
	}
	return code
}

// listIDs names at most 20 processes, then "and M more".
func listIDs(ids []proc.ID) string {
	const most = 20
	var b strings.Builder
	for i, id := range ids {
		if i == most {
			fmt.Fprintf(&b, " and %d more", len(ids)-most)
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(id.PID))
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// sentList describes what a survivor was sent, for the failure line.
func sentList(o stop.Outcome) string {
	if len(o.Sent) == 0 {
		return "the schedule"
	}
	names := make([]string, len(o.Sent))
	for i, s := range o.Sent {
		names[i] = syntax.SignalName(s)
	}
	return strings.Join(names, ", ") + " (" + strconv.Itoa(len(o.Sent)) + " signals in " + o.Elapsed.Round(time.Millisecond).String() + ")"
}
