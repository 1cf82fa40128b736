package scripttest

import (
	"flag"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdStartsleeper is the preamble most scenarios began with, in one line:
//
//	! exec sleeper -pidfile p &
//	waitfile -nonempty p
//	readpid PID p
//
// becomes `startsleeper p PID`. The sleeper is this scenario's: killed and
// reaped when the scenario ends, and not before. Until then a sleeper that
// was stopped stays a zombie, as a background command does until `wait`,
// so its PID cannot be recycled by another test's process while the
// scenario still names it by a bare $PID. It is not one of testscript's
// background commands: `wait` does not wait for it, %N does not count it.
func cmdStartsleeper(ts *testscript.TestScript, neg bool, args []string) {
	fs := flag.NewFlagSet("startsleeper", flag.ContinueOnError)
	var ignore []string
	fs.Func("ignore", "signal the sleeper ignores (repeatable)", func(v string) error {
		ignore = append(ignore, v)
		return nil
	})
	setsid := fs.Bool("setsid", false, "the sleeper starts a new session first")
	if neg || fs.Parse(args) != nil || fs.NArg() < 1 || fs.NArg() > 2 {
		ts.Fatalf("usage: startsleeper [-ignore SIG]... [-setsid] FILE [VAR]")
	}
	file := fs.Arg(0)
	argv := []string{"-pidfile", ts.MkAbs(file)}
	for _, sig := range ignore {
		argv = append(argv, "-ignore", sig)
	}
	if *setsid {
		argv = append(argv, "-setsid")
	}
	path, err := lookPath(ts, "sleeper")
	ts.Check(err)
	cmd := exec.Command(path, argv...)
	cmd.Dir = ts.MkAbs(".")
	cmd.Env = append(os.Environ(), "PATH="+ts.Getenv("PATH"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	ts.Check(cmd.Start())
	ts.Defer(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	deadline := time.Now().Add(waitLimit)
	for delay := time.Millisecond; ; delay = min(2*delay, 20*time.Millisecond) {
		if fi, err := os.Stat(ts.MkAbs(file)); err == nil && fi.Size() > 0 {
			break
		}
		if ended(cmd.Process.Pid) {
			ts.Fatalf("startsleeper: sleeper ended before writing %s: %s", file, stderr.String())
		}
		if time.Now().After(deadline) {
			ts.Fatalf("startsleeper: %s did not appear within %v", file, waitLimit)
		}
		time.Sleep(delay)
	}
	if fs.NArg() == 2 {
		ts.Setenv(fs.Arg(1), strconv.Itoa(resolvePID(ts, "@"+file)))
	}
}

// lookPath finds name in the scenario's $PATH, where testscript.Main put
// the programs.
func lookPath(ts *testscript.TestScript, name string) (string, error) {
	for _, dir := range strings.Split(ts.Getenv("PATH"), ":") {
		p := dir + "/" + name
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
}
