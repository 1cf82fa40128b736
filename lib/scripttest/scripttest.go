// Package scripttest holds the small testscript commands tether's own
// scenarios use (and other suites may reuse): exact exit codes, readiness
// files, signals to PIDs or background commands, and stand-in processes.
//
// Register Cmds in testscript.Params.Cmds and Programs beside lib's
// ScriptCommands in testscript.Main.
package scripttest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tether-sh/tether/lib/internal/durable"
	"github.com/tether-sh/tether/lib/syntax"

	"github.com/rogpeppe/go-internal/testscript"
	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/proc"
)

// waitLimit bounds every readiness wait so a broken scenario fails instead
// of hanging; it is generous because CI machines are slow and loaded.
const waitLimit = 60 * time.Second

// Cmds are the custom script commands:
//
//	exitcode N PROG [ARGS...]   run PROG (as exec does) and require exit status N
//	waitfile [-nonempty] [-show F]... FILE
//	                            wait until FILE exists (and is not empty);
//	                            should it not, show each F in the failure
//	signal SIG TARGET           send SIG to TARGET: a PID, @FILE (PID read from
//	                            FILE) or %N (the Nth background command, 1-based);
//	                            for KILL, also wait until TARGET is gone
//	alive TARGET                succeed iff TARGET is alive (! alive: gone)
//	readpid VAR FILE            set $VAR to the PID stored in FILE
//	capture VAR                 set $VAR to the last command's stdout, trimmed
//	parked TARGET               wait until TARGET holds a pidfd and sleeps: a
//	                            watcher that is really waiting, not starting
//	childpid VAR TARGET         set $VAR to the PID of TARGET's (only) child
//	pidns VAR TARGET            set $VAR to TARGET's PID namespace (pid:[INODE])
//	nsalive NS                  succeed iff a process of PID namespace NS is
//	                            alive, zombies aside (! nsalive: none is)
//	stopped [-wait] TARGET      succeed iff TARGET is stopped (state T or t in
//	                            /proc/PID/stat; ! stopped: running or gone);
//	                            -wait waits until that holds, within a bound
//	catchfreeze STOPPER MEMBER  SIGSTOP STOPPER at a moment MEMBER is stopped,
//	                            and keep it so only if MEMBER still is: the
//	                            STOPPER is caught holding MEMBER frozen; tries
//	                            again at each freeze until it succeeds
//	procs PATTERN               succeed iff a process of this scenario (its
//	                            environment holds the scenario's $WORK, or its
//	                            working directory is in $WORK), zombies aside,
//	                            runs a command line matching the regexp
//	                            PATTERN, as pgrep -f does (! procs: none does);
//	                            a scenario run beside another that starts the
//	                            same program does not see the other's
//	startsleeper [-ignore SIG]... [-setsid] FILE [VAR]
//	                            start a sleeper writing FILE, wait until it
//	                            has, and set $VAR to its PID; it is reaped when
//	                            it ends and killed when the scenario ends
func Cmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"exitcode":     cmdExitcode,
		"waitfile":     cmdWaitfile,
		"signal":       cmdSignal,
		"alive":        cmdAlive,
		"readpid":      cmdReadpid,
		"capture":      cmdCapture,
		"parked":       cmdParked,
		"childpid":     cmdChildpid,
		"pidns":        cmdPidns,
		"nsalive":      cmdNsalive,
		"stopped":      cmdStopped,
		"catchfreeze":  cmdCatchfreeze,
		"startsleeper": cmdStartsleeper,
		"procs":        cmdProcs,
	}
}

func cmdExitcode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exitcode N PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode: bad status %q", args[0])
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exitcode: %v", err)
		}
		got = ee.ExitCode()
		if got < 0 {
			if ws, ok := ee.Sys().(unix.WaitStatus); ok && ws.Signaled() {
				ts.Fatalf("exitcode: %s died of signal %v; want exit %d", args[1], ws.Signal(), want)
			}
		}
	}
	if got != want {
		ts.Fatalf("exitcode: %s exited %d; want %d", args[1], got, want)
	}
}

// cmdWaitfile is waitfile [-nonempty] [-show FILE]... FILE: it waits up
// to waitLimit for FILE to appear (with -nonempty, to hold a byte); when
// it does not, the failure shows each -show FILE, such as the stderr of
// the background command that was to write FILE, so that a failure seen
// once under load says why.
func cmdWaitfile(ts *testscript.TestScript, neg bool, args []string) {
	nonEmpty := false
	var show []string
	for len(args) > 1 {
		if args[0] == "-nonempty" {
			nonEmpty, args = true, args[1:]
		} else if args[0] == "-show" && len(args) > 2 {
			show, args = append(show, args[1]), args[2:]
		} else {
			break
		}
	}
	if neg || len(args) != 1 || strings.HasPrefix(args[0], "-") {
		ts.Fatalf("usage: waitfile [-nonempty] [-show FILE]... FILE")
	}
	path := ts.MkAbs(args[0])
	deadline := time.Now().Add(waitLimit)
	for delay := time.Millisecond; ; delay = min(2*delay, 20*time.Millisecond) {
		if fi, err := os.Stat(path); err == nil && (!nonEmpty || fi.Size() > 0) {
			return
		}
		if time.Now().After(deadline) {
			for _, f := range show {
				b, err := os.ReadFile(ts.MkAbs(f))
				if err != nil {
					ts.Logf("waitfile: %s: %v", f, err)
					continue
				}
				ts.Logf("waitfile: %s holds:\n%s", f, b)
			}
			ts.Fatalf("waitfile: %s did not appear within %v", args[0], waitLimit)
		}
		time.Sleep(delay)
	}
}

// resolvePID turns a TARGET into a PID.
func resolvePID(ts *testscript.TestScript, target string) int {
	switch {
	case strings.HasPrefix(target, "@"):
		b, err := os.ReadFile(ts.MkAbs(target[1:]))
		ts.Check(err)
		pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "@", 2)[0]))
		if err != nil {
			ts.Fatalf("%s: no PID in file: %v", target, err)
		}
		return pid
	case strings.HasPrefix(target, "%"):
		n, err := strconv.Atoi(target[1:])
		bg := ts.BackgroundCmds()
		if err != nil || n < 1 || n > len(bg) {
			ts.Fatalf("%s: no such background command (%d running)", target, len(bg))
		}
		return bg[n-1].Process.Pid
	}
	pid, err := strconv.Atoi(target)
	if err != nil {
		ts.Fatalf("bad target %q", target)
	}
	return pid
}

func cmdSignal(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: signal SIG TARGET")
	}
	sig, err := syntax.ParseSignal(args[0])
	ts.Check(err)
	id := resolveID(ts, args[1])
	if id.PID <= 1 {
		ts.Fatalf("signal: refusing pid %d", id.PID)
	}
	// An identity-checked pidfd: a target that is gone, its PID maybe
	// recycled by another test's process, is never signalled.
	h, err := proc.Open(id)
	if errors.Is(err, proc.ErrGone) && sig == unix.SIGKILL {
		return
	}
	ts.Check(err)
	defer h.Close()
	if err := h.Signal(sig); err != nil {
		if errors.Is(err, proc.ErrGone) && sig == unix.SIGKILL {
			return
		}
		ts.Fatalf("signal %s %s: %v", args[0], args[1], err)
	}
	if sig != unix.SIGKILL {
		return
	}
	// KILL is delivered asynchronously: wait until the target is really
	// gone, so the next step never races its death.
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if h.Wait(ctx) != nil {
		ts.Fatalf("signal: pid %d still alive %v after KILL", id.PID, waitLimit)
	}
}

func cmdAlive(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: alive TARGET")
	}
	id := resolveID(ts, args[0])
	alive, err := proc.Alive(id)
	ts.Check(err)
	if alive == neg {
		ts.Fatalf("alive %s: pid %d alive = %v; want %v", args[0], id.PID, alive, !neg)
	}
}

// resolveID is resolvePID with the target's identity: the START a pidfile
// gives, or else — the file holds a bare PID, as `echo $$` writes — the
// start of the process that has the PID now, if it can have written the
// file. A process that started after the file was last written cannot
// have, so it is another one that got the PID after the writer died, and
// the target is given a START that no process has: it is gone. On a
// machine that recycles PIDs fast, signalling such a PID would hit
// another test's process.
func resolveID(ts *testscript.TestScript, target string) proc.ID {
	pid := resolvePID(ts, target)
	if !strings.HasPrefix(target, "@") {
		return proc.ID{PID: pid}
	}
	path := ts.MkAbs(target[1:])
	b, err := os.ReadFile(path)
	ts.Check(err)
	if id, err := proc.ParseID(strings.TrimSpace(string(b))); err == nil && id.Start != 0 {
		return id
	}
	fi, err := os.Stat(path)
	ts.Check(err)
	st, err := proc.ReadStat(pid)
	if err != nil {
		return proc.ID{PID: pid}
	}
	if startedAt(st.Start).After(fi.ModTime().Add(2 * tick)) {
		return proc.ID{PID: pid, Start: st.Start + 1}
	}
	return proc.ID{PID: pid, Start: st.Start}
}

// tick is a clock tick of /proc/PID/stat's start time (USER_HZ).
const tick = 10 * time.Millisecond

func cmdReadpid(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: readpid VAR FILE")
	}
	ts.Setenv(args[0], strconv.Itoa(resolvePID(ts, "@"+args[1])))
}

// WriteFileAtomic writes data to path (0644) through a temporary file and
// rename (durable.WriteFile), so a reader waiting for path never sees it
// half written.
func WriteFileAtomic(path string, data []byte) error {
	return durable.WriteFile(path, data, 0o644)
}

func cmdCapture(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: capture VAR")
	}
	ts.Setenv(args[0], strings.TrimSpace(ts.ReadFile("stdout")))
}

func cmdParked(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: parked TARGET")
	}
	pid := resolvePID(ts, args[0])
	deadline := time.Now().Add(waitLimit)
	for !parked(pid) {
		if time.Now().After(deadline) {
			ts.Fatalf("parked: pid %d did not start waiting on a pidfd within %v", pid, waitLimit)
		}
		time.Sleep(time.Millisecond)
	}
}

// parked reports whether pid holds a pidfd and its main thread sleeps.
func parked(pid int) bool {
	st, err := proc.ReadStat(pid)
	if err != nil || st.State != 'S' {
		return false
	}
	return proc.HoldsPidfd(pid)
}

func cmdChildpid(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: childpid VAR TARGET")
	}
	parent := resolvePID(ts, args[1])
	var children []int
	proc.Scan(func(st proc.Stat) {
		if st.PPID == parent {
			children = append(children, st.PID)
		}
	})
	if len(children) != 1 {
		ts.Fatalf("childpid: pid %d has %d children %v; want one", parent, len(children), children)
	}
	ts.Setenv(args[0], strconv.Itoa(children[0]))
}

func cmdPidns(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: pidns VAR TARGET")
	}
	ns, err := proc.NamespaceOf(resolvePID(ts, args[1]))
	ts.Check(err)
	ts.Setenv(args[0], ns)
}

func cmdNsalive(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: nsalive NS")
	}
	var live []string
	proc.Scan(func(st proc.Stat) {
		if ns, err := proc.NamespaceOf(st.PID); err == nil && ns == args[0] && st.State != 'Z' {
			live = append(live, strconv.Itoa(st.PID)+" ("+st.Comm+")")
		}
	})
	switch {
	case neg && len(live) > 0:
		ts.Fatalf("alive in %s: %s", args[0], strings.Join(live, ", "))
	case !neg && len(live) == 0:
		ts.Fatalf("nothing alive in %s", args[0])
	}
}

func cmdProcs(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: procs PATTERN")
	}
	re, err := regexp.Compile(args[0])
	if err != nil {
		ts.Fatalf("procs: %v", err)
	}
	work := ts.Getenv("WORK")
	var found []string
	proc.Scan(func(st proc.Stat) {
		if st.State == proc.Zombie || st.State == proc.Dead {
			return
		}
		line, ok := scenarioCmdline(st.PID, work)
		if ok && re.MatchString(line) {
			found = append(found, strconv.Itoa(st.PID)+" ("+line+")")
		}
	})
	switch {
	case neg && len(found) > 0:
		ts.Fatalf("procs %s: %s", args[0], strings.Join(found, ", "))
	case !neg && len(found) == 0:
		ts.Fatalf("procs %s: no process of this scenario matches", args[0])
	}
}

func cmdStopped(ts *testscript.TestScript, neg bool, args []string) {
	wait := len(args) > 0 && args[0] == "-wait"
	if wait {
		args = args[1:]
	}
	if len(args) != 1 {
		ts.Fatalf("usage: stopped [-wait] TARGET")
	}
	pid := resolvePID(ts, args[0])
	deadline := time.Now().Add(waitLimit)
	for delay := 100 * time.Microsecond; ; delay = min(2*delay, 5*time.Millisecond) {
		st, err := proc.ReadStat(pid)
		stopped := err == nil && (st.State == 'T' || st.State == 't')
		if stopped != neg {
			return
		}
		if !wait {
			ts.Fatalf("stopped %s: pid %d stopped = %v; want %v", args[0], pid, stopped, !neg)
		}
		if time.Now().After(deadline) {
			ts.Fatalf("stopped -wait %s: pid %d stopped = %v for %v; want %v", args[0], pid, stopped, waitLimit, !neg)
		}
		time.Sleep(delay)
	}
}

// isStopped reports whether pid is in state T or t.
func isStopped(pid int) bool {
	st, err := proc.ReadStat(pid)
	return err == nil && (st.State == 'T' || st.State == 't')
}

func cmdCatchfreeze(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: catchfreeze STOPPER MEMBER")
	}
	stopper, member := resolvePID(ts, args[0]), resolvePID(ts, args[1])
	deadline := time.Now().Add(waitLimit)
	for tries := 0; time.Now().Before(deadline); {
		if !isStopped(member) {
			time.Sleep(20 * time.Microsecond)
			continue
		}
		tries++
		ts.Check(unix.Kill(stopper, unix.SIGSTOP))
		for !isStopped(stopper) {
			if time.Now().After(deadline) {
				ts.Fatalf("catchfreeze: pid %d did not stop", stopper)
			}
			time.Sleep(20 * time.Microsecond)
		}
		if isStopped(member) {
			ts.Logf("catchfreeze: caught pid %d holding pid %d stopped (try %d)", stopper, member, tries)
			return
		}
		ts.Check(unix.Kill(stopper, unix.SIGCONT))
	}
	ts.Fatalf("catchfreeze: never caught pid %d holding pid %d stopped within %v", stopper, member, waitLimit)
}
