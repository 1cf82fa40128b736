//go:build linux

package main

// Child bookkeeping and /proc probes. Every process the benchmark starts is
// registered here so that nothing outlives the run: children get
// Pdeathsig=KILL, the benchmark is a child subreaper (orphaned grandchildren
// come back to it), and cleanup kills and reaps whatever is left.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

var (
	regMu   sync.Mutex
	running = map[*os.Process]bool{}
	devnull *os.File
)

// child is one started process: Wait reaps it exactly once.
type child struct {
	p     *os.Process
	once  sync.Once
	state *os.ProcessState
	err   error
}

// spawn starts argv with stdin/stdout from /dev/null and stderr to errOut
// (nil: /dev/null). It returns once the exec has happened.
func spawn(argv []string, errOut *os.File) (*child, error) {
	if errOut == nil {
		errOut = devnull
	}
	path := argv[0]
	if !strings.Contains(path, "/") {
		lp, err := lookPath(path)
		if err != nil {
			return nil, err
		}
		path = lp
	}
	p, err := os.StartProcess(path, argv, &os.ProcAttr{
		Files: []*os.File{devnull, devnull, errOut},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		return nil, err
	}
	regMu.Lock()
	running[p] = true
	regMu.Unlock()
	return &child{p: p}, nil
}

// Wait reaps the child (once; later calls return the first result).
func (c *child) Wait() (*os.ProcessState, error) {
	c.once.Do(func() {
		c.state, c.err = c.p.Wait()
		regMu.Lock()
		delete(running, c.p)
		regMu.Unlock()
	})
	return c.state, c.err
}

// Pid is the child's process id.
func (c *child) Pid() int { return c.p.Pid }

// Kill sends SIGKILL and reaps.
func (c *child) Kill() {
	c.p.Signal(syscall.SIGKILL)
	c.Wait()
}

var lookCache sync.Map

func lookPath(name string) (string, error) {
	if v, ok := lookCache.Load(name); ok {
		return v.(string), nil
	}
	for _, dir := range filepath.SplitList(os.Getenv("PATH") + ":/usr/sbin:/sbin") {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			lookCache.Store(name, p)
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: not found in PATH", name)
}

// cleanup kills every registered child, reaps it, then kills and reaps any
// other child (orphans re-parented to us as subreaper).
func cleanup() {
	regMu.Lock()
	ps := make([]*os.Process, 0, len(running))
	for p := range running {
		ps = append(ps, p)
	}
	regMu.Unlock()
	for _, p := range ps {
		p.Signal(syscall.SIGKILL)
	}
	for _, p := range ps {
		p.Wait()
	}
	sweepChildren()
}

// sweepChildren kills and reaps every remaining child of this process.
func sweepChildren() {
	self := os.Getpid()
	for round := 0; round < 50; round++ {
		kids := childrenOf(self)
		for _, pid := range kids {
			unix.Kill(pid, unix.SIGKILL)
		}
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
		if len(kids) == 0 {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readStat(p)
		if err == nil && st.ppid == pid {
			out = append(out, p)
		}
	}
	return out
}

type stat struct {
	state byte
	ppid  int
}

func readStat(path any) (stat, error) {
	var f string
	switch v := path.(type) {
	case int:
		f = "/proc/" + strconv.Itoa(v) + "/stat"
	case string:
		f = v
	}
	b, err := os.ReadFile(f)
	if err != nil {
		return stat{}, err
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+4 >= len(b) {
		return stat{}, errors.New("short stat")
	}
	fields := strings.Fields(string(b[i+2:]))
	if len(fields) < 2 {
		return stat{}, errors.New("short stat")
	}
	ppid, _ := strconv.Atoi(fields[1])
	return stat{state: fields[0][0], ppid: ppid}, nil
}

// readyWaiter reports whether pid is parked waiting for a death: it holds a
// pidfd (when wantPidfd), every thread sleeps (state S), and at least one
// thread sleeps in the kernel function named by wchan (e.g. do_epoll_wait).
func readyWaiter(pid int, wantPidfd bool, wchan string) bool {
	base := "/proc/" + strconv.Itoa(pid)
	if wantPidfd && !hasPidfd(base) {
		return false
	}
	tasks, err := os.ReadDir(base + "/task")
	if err != nil || len(tasks) == 0 {
		return false
	}
	inWait := false
	for _, t := range tasks {
		tb := base + "/task/" + t.Name()
		st, err := readStat(tb + "/stat")
		if err != nil || st.state != 'S' {
			return false
		}
		if !inWait {
			w, _ := os.ReadFile(tb + "/wchan")
			inWait = strings.Contains(string(w), wchan)
		}
	}
	return inWait
}

func hasPidfd(base string) bool {
	fds, err := os.ReadDir(base + "/fd")
	if err != nil {
		return false
	}
	for _, fd := range fds {
		if l, err := os.Readlink(base + "/fd/" + fd.Name()); err == nil && l == "anon_inode:[pidfd]" {
			return true
		}
	}
	return false
}

// waitUntil polls cond every 50µs for at most limit.
func waitUntil(limit time.Duration, cond func() bool) error {
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			return errors.New("timed out waiting for readiness")
		}
		time.Sleep(50 * time.Microsecond)
	}
	return nil
}

// statusField returns the value of field key in /proc/PID/status.
func statusField(pid int, key string) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// rssKiB is VmRSS of pid in KiB.
func rssKiB(pid int) float64 {
	v := strings.TrimSuffix(statusField(pid, "VmRSS"), " kB")
	n, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
	return n
}

// ignoresTERM reports whether pid runs comm with SIGTERM ignored.
func ignoresTERM(pid int, comm string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil || strings.TrimSpace(string(b)) != comm {
		return false
	}
	mask, err := strconv.ParseUint(statusField(pid, "SigIgn"), 16, 64)
	return err == nil && mask&(1<<(unix.SIGTERM-1)) != 0
}

// waitLimit reaps c, killing it (and failing) if it runs longer than limit.
func waitLimit(c *child, limit time.Duration, name string) (*os.ProcessState, error) {
	t := time.AfterFunc(limit, func() { c.p.Signal(syscall.SIGKILL) })
	st, err := c.Wait()
	if !t.Stop() {
		return st, fmt.Errorf("%s still running after %v; killed", name, limit)
	}
	return st, err
}
