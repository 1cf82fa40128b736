package scripttest

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/tether-sh/tether/lib/syntax"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/proc"
)

// Programs are stand-in processes for scenarios, for testscript.Main:
//
//	sleeper [-pidfile F] [-ignore SIG]... [-for D] [-setsid]
//	    write PID@START to F once ready, ignore the given signals, sleep
//	    for D (default: until killed); -setsid first makes it the leader of
//	    a new session and process group
//	tgleader -pidfile F -release R
//	    start a second thread, end the main thread with the raw exit
//	    syscall (not exit_group), write F from the second thread, and let
//	    the process run on until file R appears
func Programs() map[string]func() {
	return map[string]func(){
		"sleeper":  func() { os.Exit(sleeper(os.Args[1:])) },
		"tgleader": func() { os.Exit(tgleader(os.Args[1:])) },
	}
}

type sigList []unix.Signal

func (s *sigList) String() string { return fmt.Sprint(*s) }
func (s *sigList) Set(v string) error {
	sig, err := syntax.ParseSignal(v)
	if err != nil {
		return err
	}
	*s = append(*s, sig)
	return nil
}

func sleeper(args []string) int {
	fs := flag.NewFlagSet("sleeper", flag.ContinueOnError)
	pidfile := fs.String("pidfile", "", "write PID@START here when ready")
	dur := fs.Duration("for", 0, "sleep this long (0: until killed)")
	var ignore sigList
	fs.Var(&ignore, "ignore", "signal to ignore (repeatable)")
	setsid := fs.Bool("setsid", false, "start a new session first")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *setsid {
		if _, err := unix.Setsid(); err != nil {
			fmt.Fprintln(os.Stderr, "sleeper: setsid:", err)
			return 3
		}
	}
	for _, sig := range ignore {
		signal.Ignore(sig)
	}
	if *pidfile != "" {
		if err := WriteFileAtomic(*pidfile, []byte(selfToken()+"\n")); err != nil {
			fmt.Fprintln(os.Stderr, "sleeper:", err)
			return 3
		}
	}
	if *dur > 0 {
		time.Sleep(*dur)
		return 0
	}
	select {}
}

// selfToken returns PID@START for the calling process. Both come from
// /proc/self/stat, so that inside a new PID namespace (with the host's
// /proc) the token still names the process as the host sees it.
func selfToken() string {
	st, err := proc.SelfStat()
	if err != nil {
		return strconv.Itoa(os.Getpid())
	}
	return proc.ID{PID: st.PID, Start: st.Start}.String()
}

// The main goroutine leaves the main thread once init is over unless init
// locks it there; tgleader must exit exactly the thread-group leader.
// Under load, an unlocked main goroutine sometimes ran on another thread,
// its raw exit ended that thread instead, and the leader never became a
// zombie.
func init() {
	if filepath.Base(os.Args[0]) == "tgleader" {
		runtime.LockOSThread()
	}
}

func tgleader(args []string) int {
	fs := flag.NewFlagSet("tgleader", flag.ContinueOnError)
	pidfile := fs.String("pidfile", "", "write PID@START here once the leader has exited")
	release := fs.String("release", "", "exit the process once this file exists")
	if err := fs.Parse(args); err != nil || *pidfile == "" || *release == "" {
		fmt.Fprintln(os.Stderr, "usage: tgleader -pidfile F -release R")
		return 2
	}
	token := selfToken()
	pid := os.Getpid()
	go func() {
		// Runs on some other thread: wait for the leader to become a
		// zombie, announce it, then wait for the release file.
		runtime.LockOSThread()
		for {
			if st, err := proc.ReadStat(pid); err == nil && st.State == 'Z' {
				break
			}
			time.Sleep(time.Millisecond)
		}
		if err := WriteFileAtomic(*pidfile, []byte(token+"\n")); err != nil {
			os.Exit(3)
		}
		for {
			if _, err := os.Stat(*release); err == nil {
				os.Exit(0)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	// The main goroutine is on the main thread, the thread-group leader,
	// where init locked it: the raw exit ends exactly that thread.
	for {
		unix.RawSyscall(unix.SYS_EXIT, 0, 0, 0)
	}
}
