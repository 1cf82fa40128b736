package watchpid

import (
	"cmp"
	"context"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/runner"
	"github.com/tether-sh/tether/lib/syntax"
)

// forwarded are the signals with which watchpid stops CMD's group,
// boundedly (the signal first, KILL after --grace), before it exits 128+N.
// They are caught even when watchpid was started with them ignored (a
// shell's background job ignores INT and QUIT).
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
		return exit.OK
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
		return t.Fail(err, exit.NotRun)
	}
	code := reportStop(t, g, name, res)
	if !res.Stopped {
		// CMD ended first; what it left behind went with it.
		return res.ExitCode
	}
	if code != exit.OK {
		return code
	}
	switch {
	case r.timeout:
		if !g.Quiet {
			t.Warnf("timed out after %v; stopped %s", timeout, name)
		}
		return exit.Deadline
	case r.sig != 0:
		return exit.ForSignal(r.sig)
	}
	if !g.Quiet {
		t.Warnf("%s is gone; stopped %s", targets[r.target].label(), name)
	}
	return exit.OK
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
			t.Warnf("%s ignored %s; killed", name, syntax.SignalName(res.StopIgnored))
		case len(res.Killed) > 0:
			t.Warnf("%s ignored %s; killed", name, syntax.SignalName(res.Schedule[0].Signal))
		}
	}
	if len(res.Survivors) > 0 {
		t.Warnf("could not stop %s (process group %d survived KILL)", name, res.Child.PID)
		return exit.NotRun
	}
	return exit.OK
}
