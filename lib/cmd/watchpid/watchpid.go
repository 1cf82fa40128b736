package watchpid

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/tether-sh/tether/lib/spec"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/proc"
	"github.com/tether-sh/tether/lib/runner"
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
	Quiet   bool         `short:"q" help:"Print nothing on success."`
	Parent  bool         `help:"Watch the caller's parent process."`
	ID      bool         `name:"id" help:"Print PID@START for each PID and exit (1 if one does not exist or is a thread)."`
	Status  bool         `help:"Exit with TARGET's own status once it is gone (N, or 128+SIG); 193 when the kernel cannot tell."`
	JSON    bool         `name:"json" help:"Print one JSON object per PID (--id) or per target as it goes (pid, id, gone, status, exit_code, signal, reaped)."`
	Targets []string     `arg:"" optional:"" name:"TARGET" help:"PID or PID@START."`
}

// Main runs watchpid with args and returns its exit status.
func Main(args []string) int {
	t := cli.New("watchpid", Page.Description())
	return t.Done(main(t, args))
}

func main(t *cli.Tool, args []string) int {
	own, cmd, hasCmd := cli.SplitCommand(args)
	var g grammar
	// kong's model is built only for what the generated parser leaves
	// to it: help, errors, completion.
	if _, ok := cli.FastParse(argvGrammar, &g, own); !ok {
		if _, code, done := t.Parse(&g, own); done {
			return code
		}
	}
	if hasCmd && len(cmd) == 0 {
		return t.Fail(errors.New("no command after --"), spec.ExitUsage)
	}
	if g.ID {
		if hasCmd || g.Parent || g.Status {
			return t.Fail(errors.New("--id takes PIDs only"), spec.ExitUsage)
		}
		return printIDs(t, &g)
	}
	if g.Status {
		if hasCmd {
			return t.Fail(errors.New("--status cannot be combined with -- CMD"), spec.ExitUsage)
		}
		if n := len(g.Targets) + boolInt(g.Parent); n != 1 {
			return t.Fail(fmt.Errorf("--status takes exactly one target, not %d", n), spec.ExitUsage)
		}
	}
	var timeout time.Duration = -1
	if g.Timeout != "" {
		d, err := spec.ParseDuration(g.Timeout)
		if err != nil {
			return t.Fail(fmt.Errorf("--timeout: %w", err), spec.ExitUsage)
		}
		timeout = d
	}
	// Every target is judged through /proc: a foreign one would name
	// other processes. With CMD, that is a failure before CMD started.
	if err := proc.CheckProcNS(); err != nil {
		if hasCmd {
			return t.Fail(err, spec.ExitNotRun)
		}
		return t.Fail(err, spec.ExitSystem)
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
		return t.Fail(err, spec.ExitUsage)
	}
	if hasCmd {
		return runCommand(t, &g, targets, cmd, timeout)
	}
	return wait(t, &g, targets, timeout)
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

// goneEvents reports, on the returned channel, the index of each target as
// it goes: at once for targets already gone.
func goneEvents(ctx context.Context, targets []watched) <-chan int {
	ch := make(chan int, len(targets))
	for i, w := range targets {
		if w.h == nil {
			ch <- i
			continue
		}
		go func() {
			if w.h.Wait(ctx) == nil {
				ch <- i
			}
		}()
	}
	return ch
}

// wait blocks in poll(2) on every target from this goroutine: with nothing
// else to do, that is the shortest path from a death to the exit.
func wait(t *cli.Tool, g *grammar, targets []watched, timeout time.Duration) int {
	r := &reporter{t: t, g: g, enc: json.NewEncoder(t.Stdout), done: make([]bool, len(targets))}
	code := spec.ExitOK
	var hs []*proc.Handle
	var idx []int
	for i, w := range targets {
		if w.h == nil {
			code = r.gone(i, w)
			if g.Any {
				r.running(targets)
				return code
			}
			continue
		}
		hs, idx = append(hs, w.h), append(idx, i)
	}
	gone := make([]bool, len(hs))
	done, err := proc.PollEach(hs, timeout, func(i int) bool {
		gone[i] = true
		code = r.gone(idx[i], targets[idx[i]])
		return g.Any
	})
	if err != nil {
		return t.Fail(err, spec.ExitSystem)
	}
	r.running(targets)
	if done {
		return code
	}
	var running []string
	for i := range hs {
		if !gone[i] {
			running = append(running, targets[idx[i]].label())
		}
	}
	t.Warnf("timed out after %v; still running: %s", timeout, strings.Join(running, ", "))
	return spec.ExitDeadline
}

// reporter says what became of each target: a line on stderr and, with
// --json, an object on stdout.
type reporter struct {
	t    *cli.Tool
	g    *grammar
	enc  *json.Encoder
	done []bool // targets already reported
}

// targetJSON is the --json form of one target; every key is always there.
type targetJSON struct {
	PID  int     `json:"pid"`
	ID   *string `json:"id"`
	Gone bool    `json:"gone"`
	proc.ExitJSON
}

func newTargetJSON(w watched) targetJSON {
	j := targetJSON{PID: w.pid}
	if w.h != nil {
		id := w.h.ID().String()
		j.ID = &id
	}
	return j
}

// gone reports target i, which is gone, and returns the exit code it
// gives watchpid: its own status with --status, else 0.
func (r *reporter) gone(i int, w watched) int {
	r.done[i] = true
	if !r.g.Status && !r.g.JSON {
		if !r.g.Quiet {
			r.t.Warnf("%s is gone", w.label())
		}
		return spec.ExitOK
	}
	info, err := exitInfo(w)
	if r.g.JSON {
		j := newTargetJSON(w)
		j.Gone = true
		if err == nil {
			j.ExitJSON = info.JSON()
		}
		r.enc.Encode(j)
	}
	switch {
	case !r.g.Status:
		if !r.g.Quiet {
			r.t.Warnf("%s is gone", w.label())
		}
		return spec.ExitOK
	case err != nil:
		// Not a success, so said even with --quiet: the 193 needs its why.
		r.t.Warnf("%v", err)
		return exitStatusUnknown
	}
	if !r.g.Quiet {
		r.t.Warnf("%s %s", w.label(), info)
	}
	return info.Status()
}

// running reports, with --json, each target not reported yet: it is still
// running as watchpid returns (--any, or --timeout).
func (r *reporter) running(targets []watched) {
	if !r.g.JSON {
		return
	}
	for i, w := range targets {
		if !r.done[i] {
			r.enc.Encode(newTargetJSON(w))
		}
	}
}

// exitInfo is how target w ended, as far as the kernel can tell.
func exitInfo(w watched) (proc.ExitInfo, error) {
	if w.h == nil {
		return proc.ExitInfo{}, fmt.Errorf("%s was gone before watchpid held a pidfd on it: %w", w.label(), proc.ErrExitUnknown)
	}
	return w.h.ExitInfo()
}

func printIDs(t *cli.Tool, g *grammar) int {
	if len(g.Targets) == 0 {
		return t.Fail(errors.New("--id needs at least one PID"), spec.ExitUsage)
	}
	ids := make([]proc.ID, len(g.Targets))
	for i, a := range g.Targets {
		id, err := proc.ParseID(a)
		if err != nil {
			return t.Fail(err, spec.ExitUsage)
		}
		ids[i] = id
	}
	if err := proc.CheckProcNS(); err != nil {
		return t.Fail(err, spec.ExitSystem)
	}
	code := spec.ExitOK
	enc := json.NewEncoder(t.Stdout)
	// With --json every PID asked for gets its object, every key present:
	// start and id are null for one that does not exist.
	type idJSON struct {
		PID   int     `json:"pid"`
		Start *uint64 `json:"start"`
		ID    *string `json:"id"`
	}
	for _, want := range ids {
		// Open, not a bare /proc lookup: /proc/TID/stat exists for a
		// thread too, and a thread id is not a process any tool accepts.
		id, err := openID(want)
		if err != nil {
			thread := errors.Is(err, proc.ErrBadID)
			if thread || errors.Is(err, proc.ErrGone) {
				if thread {
					t.Warnf("pid %d is a thread, not a process", want.PID)
				} else {
					t.Warnf("pid %d does not exist", want.PID)
				}
				code = spec.ExitRefused
				if g.JSON {
					enc.Encode(idJSON{PID: want.PID})
				}
				continue
			}
			return t.Fail(err, spec.ExitSystem)
		}
		if g.JSON {
			token := id.String()
			enc.Encode(idJSON{id.PID, &id.Start, &token})
		} else {
			fmt.Fprintln(t.Stdout, id.String())
		}
	}
	return code
}

// openID returns the identity of the process want names: ErrGone when it
// does not exist (or its START differs), ErrBadID for a thread id.
func openID(want proc.ID) (proc.ID, error) {
	h, err := proc.Open(want)
	if err != nil {
		return proc.ID{}, err
	}
	defer h.Close()
	return h.ID(), nil
}

// forwarded are the signals with which watchpid stops CMD's group,
// boundedly (the signal first, KILL after --grace), before it exits 128+N.
// They are caught even when watchpid was started with them ignored (a
// shell's background job ignores INT and QUIT), as they always were.
var forwarded = []os.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT}

// runCommand runs CMD on the runner until it ends, or until the watch is
// over, a forwarded signal arrives or --timeout passes: then the runner
// stops CMD's group boundedly, and whatever CMD left behind, and watchpid
// says why.
func runCommand(t *cli.Tool, g *grammar, targets []watched, argv []string, timeout time.Duration) int {
	name := argv[0]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := goneEvents(ctx, targets)
	// A target that is already gone: starting CMD would only be to stop it.
	first, done, n := alreadyGone(events, targets, g.Any)
	if done {
		if !g.Quiet {
			t.Warnf("%s is gone; did not start %s", targets[first].label(), name)
		}
		return spec.ExitOK
	}

	sigs := runner.Catch(forwarded...)
	defer sigs.Stop()
	stopNow := make(chan unix.Signal, 1)
	why := make(chan reason, 1)
	go func() {
		why <- watch(ctx, g, events, len(targets)-n, sigs.C(), timeout, stopNow)
	}()
	res, err := runner.Run(context.Background(), runner.Options{
		Argv:  argv,
		Grace: g.Grace.D(),
		// Not forwarded as they are: each signal stops CMD (stopNow).
		Forward: []os.Signal{},
		Stop:    stopNow,
	})
	cancel()
	r := <-why
	if err != nil {
		return t.Fail(err, spec.ExitNotRun)
	}
	code := reportStop(t, g, name, res)
	if !res.Stopped {
		// CMD ended first; what it left behind went with it.
		return res.ExitCode
	}
	if code != spec.ExitOK {
		return code
	}
	switch {
	case r.timeout:
		t.Warnf("timed out after %v; stopped %s", timeout, name)
		return spec.ExitDeadline
	case r.sig != 0:
		return spec.SignalExit(r.sig)
	}
	if !g.Quiet {
		t.Warnf("%s is gone; stopped %s", targets[r.target].label(), name)
	}
	return spec.ExitOK
}

// reason is why watch asked the runner to stop CMD: --timeout passed, a
// forwarded signal sig arrived, or targets[target] was the one whose death
// ended the watch.
type reason struct {
	timeout bool
	sig     unix.Signal
	target  int
}

// watch waits, while CMD runs, for the watch to be over (the last of the
// left targets still there gone, or any one with --any), a signal from
// sigs or the timeout (none when negative); then it asks the runner to stop
// CMD through stopNow, with the signal caught, else TERM. It returns why,
// or the zero reason once ctx is done.
func watch(ctx context.Context, g *grammar, events <-chan int, left int, sigs <-chan os.Signal, timeout time.Duration, stopNow chan<- unix.Signal) reason {
	// --timeout with CMD is a deadline: CMD is stopped like at the
	// target's death, and watchpid exits 124.
	var deadline <-chan time.Time
	if timeout >= 0 {
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		deadline = timer.C
	}
	for {
		var r reason
		select {
		case <-ctx.Done():
			return reason{}
		case <-deadline:
			r.timeout = true
		case sig := <-sigs:
			r.sig = sig.(unix.Signal)
		case i := <-events:
			if left--; left > 0 && !g.Any {
				continue
			}
			r.target = i
		}
		stopNow <- cmp.Or(r.sig, unix.SIGTERM)
		return r
	}
}

// alreadyGone drains the events of targets that were gone before CMD
// started: n of them, the first at index first. done reports whether that
// already satisfies the watch.
func alreadyGone(events <-chan int, targets []watched, anyGone bool) (first int, done bool, n int) {
	first = -1
	for _, w := range targets {
		if w.h == nil {
			n++
		}
	}
	for k := 0; k < n; k++ {
		if i := <-events; first < 0 {
			first = i
		}
	}
	return first, n > 0 && (anyGone || n == len(targets)), n
}

// reportStop says what stopping CMD, or what CMD left behind, took: a
// KILL after the first signal was ignored, or something that outlived
// even KILL (then it returns 125).
func reportStop(t *cli.Tool, g *grammar, name string, res runner.Result) int {
	if !g.Quiet {
		switch {
		case res.StopIgnored != 0:
			t.Warnf("%s ignored %s; killed", name, spec.SignalName(res.StopIgnored))
		case len(res.Killed) > 0:
			t.Warnf("%s ignored %s; killed", name, spec.SignalName(res.Schedule[0].Signal))
		}
	}
	if len(res.Survivors) > 0 {
		t.Warnf("could not stop %s (process group %d survived KILL)", name, res.Child.PID)
		return spec.ExitNotRun
	}
	return spec.ExitOK
}
