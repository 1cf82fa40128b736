//go:build linux

// Command foundation benchmarks watchpid and stopbounded against the peer
// tools on this machine (procps pidwait, coreutils tail --pid, dpkg's
// start-stop-daemon, util-linux flock, /bin/true), in one interleaved run:
// each iteration alternates the tools (and which one goes first) so machine
// noise hits both equally. See bench/README.md and issue 2 ("Speed").
//
//	go run ./bench/foundation [-n 200] [-slow 10] [-tail 5] [-bin DIR]
//
// The tools are built exactly as install.sh builds them (static, trimmed,
// stripped, version stamped) into a temporary directory. Every child is
// reaped and nothing is left running when the program exits.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

var (
	flagN    = flag.Int("n", 200, "iterations per tool for latency, stop and start-up")
	flagSlow = flag.Int("slow", 10, "iterations per tool for the 1-second grace overshoot")
	flagTail = flag.Int("tail", 5, "iterations of tail --pid (it polls once a second; 0 skips it)")
	flagBin  = flag.String("bin", "", "use the tools already built in `DIR` instead of building them")
	flagOnly = flag.String("only", "", "comma-separated subset: latency,stop,overshoot,startup")
	flagV    = flag.Bool("v", false, "print every sample")
)

// bin holds the paths of the tools under test.
var bin struct{ watchpid, stopbounded string }

func main() {
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: go run ./bench/foundation [flags]\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	os.Exit(run())
}

func run() (code int) {
	var err error
	if devnull, err = os.OpenFile(os.DevNull, os.O_RDWR, 0); err != nil {
		fmt.Fprintln(os.Stderr, "foundation:", err)
		return 3
	}
	// Orphans of the tools under test come back to us, to be reaped.
	unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)

	tmp, err := os.MkdirTemp("", "tether-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "foundation:", err)
		return 3
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		s := <-sigs
		cleanup()
		os.RemoveAll(tmp)
		fmt.Fprintf(os.Stderr, "foundation: interrupted by %v; children reaped\n", s)
		os.Exit(128 + int(s.(syscall.Signal)))
	}()
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintln(os.Stderr, "foundation:", r)
			code = 1
		}
		cleanup()
		os.RemoveAll(tmp)
	}()

	dir := *flagBin
	if dir == "" {
		dir = filepath.Join(tmp, "bin")
		if err := build(dir); err != nil {
			fmt.Fprintln(os.Stderr, "foundation:", err)
			return 3
		}
	}
	bin.watchpid = filepath.Join(dir, "watchpid")
	bin.stopbounded = filepath.Join(dir, "stopbounded")
	for _, need := range []string{"pidwait", "start-stop-daemon", "flock", "sleep", "sh"} {
		if _, err := lookPath(need); err != nil {
			fmt.Fprintln(os.Stderr, "foundation:", err)
			return 3
		}
	}
	fmt.Printf("tether foundation benchmark: %s, %d CPUs, %s; n=%d slow=%d tail=%d\n",
		kernel(), runtime.NumCPU(), runtime.Version(), *flagN, *flagSlow, *flagTail)

	only := map[string]bool{}
	for _, s := range strings.Split(*flagOnly, ",") {
		if s != "" {
			only[s] = true
		}
	}
	want := func(s string) bool { return len(only) == 0 || only[s] }

	var rows []row
	if want("latency") {
		rows = append(rows, benchLatency(tmp)...)
	}
	if want("stop") {
		rows = append(rows, benchStop()...)
	}
	if want("overshoot") {
		rows = append(rows, benchOvershoot()...)
	}
	if want("startup") {
		rows = append(rows, benchStartup()...)
	}
	printTable(rows)
	for _, r := range rows {
		if r.verdict == "MISS" {
			return 1
		}
	}
	return 0
}

// build compiles ./cmd/... into dir exactly as install.sh does. If another
// tool does not compile at the moment, it falls back to the two under test.
func build(dir string) error {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return errors.New("run from inside the tether module")
	}
	root := filepath.Dir(gomod)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	goBuild := func(pkgs ...string) ([]byte, error) {
		args := append([]string{"build", "-trimpath", "-ldflags",
			"-w -X github.com/tether-sh/tether/lib/cli.Version=bench", "-o", dir + "/"}, pkgs...)
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		return cmd.CombinedOutput()
	}
	fmt.Fprintf(os.Stderr, "building ./cmd/... (CGO_ENABLED=0 -trimpath -w) into %s\n", dir)
	if out, err := goBuild("./cmd/..."); err != nil {
		fmt.Fprintf(os.Stderr, "warning: go build ./cmd/... failed; building only watchpid and stopbounded\n%s", out)
		if out, err := goBuild("./cmd/watchpid", "./cmd/stopbounded"); err != nil {
			return fmt.Errorf("go build: %v\n%s", err, out)
		}
	}
	return nil
}

func kernel() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return "linux"
	}
	return "Linux " + unix.ByteSliceToString(u.Release[:])
}

// ---- 1. death-detection latency ------------------------------------------

// watcher describes one death watcher: how to start it on pid, and how to
// know it is parked waiting (not sleep-guessed).
type watcher struct {
	name  string
	argv  func(pid int, pidfile string) []string
	ready func(pid int) bool
}

var (
	wWatchpid = watcher{"watchpid", func(pid int, _ string) []string {
		return []string{bin.watchpid, strconv.Itoa(pid)}
	}, func(w int) bool { return readyWaiter(w, true, "poll_schedule_timeout") }}
	wPidwait = watcher{"pidwait", func(_ int, pf string) []string {
		return []string{"pidwait", "-F", pf}
	}, func(w int) bool { return readyWaiter(w, true, "do_epoll_wait") }}
	// tail --pid has no pidfd: it sleeps and re-checks with kill(pid, 0).
	wTail = watcher{"tail --pid", func(pid int, _ string) []string {
		return []string{"tail", "--pid=" + strconv.Itoa(pid), "-f", os.DevNull}
	}, func(w int) bool { return readyWaiter(w, false, "nanosleep") }}
)

// deathOnce starts a target and w on it, waits until w is parked, SIGKILLs
// the target and returns the time until w has exited, and w's RSS when
// parked.
func deathOnce(w watcher, tmp string) (time.Duration, float64) {
	target, err := spawn([]string{"sleep", "1000"}, nil)
	must(err)
	defer target.Kill()
	pidfile := filepath.Join(tmp, "target.pid")
	must(os.WriteFile(pidfile, []byte(strconv.Itoa(target.Pid())+"\n"), 0o644))
	wc, err := spawn(w.argv(target.Pid(), pidfile), nil)
	must(err)
	defer wc.Kill()
	if err := waitUntil(5*time.Second, func() bool { return w.ready(wc.Pid()) }); err != nil {
		panic(fmt.Sprintf("%s: %v", w.name, err))
	}
	rss := rssKiB(wc.Pid())
	t0 := time.Now()
	must(unix.Kill(target.Pid(), unix.SIGKILL))
	// Reap the target at once, as a real parent would: tail --pid (kill(pid,
	// 0)) counts an unreaped zombie as alive; pidfd watchers do not care.
	go target.Wait()
	st, err := waitLimit(wc, 10*time.Second, w.name)
	d := time.Since(t0)
	must(err)
	if !st.Success() {
		panic(fmt.Sprintf("%s exited %v", w.name, st))
	}
	return d, rss
}

// inTurn runs each of fns once, starting with fns[i%len(fns)], so that
// over the iterations i each goes first equally often and machine noise
// hits all of them alike.
func inTurn(i int, fns ...func()) {
	for k := range fns {
		fns[(i+k)%len(fns)]()
	}
}

func benchLatency(tmp string) []row {
	n := *flagN
	fmt.Fprintf(os.Stderr, "1. death-detection latency: %d × watchpid / pidwait, %d × tail --pid\n", n, *flagTail)
	var wp, pw, tl, wpRSS, pwRSS []float64
	for i := 0; i < n; i++ {
		inTurn(i, func() {
			d, rss := deathOnce(wWatchpid, tmp)
			wp, wpRSS = append(wp, ms(d)), append(wpRSS, rss)
		}, func() {
			d, rss := deathOnce(wPidwait, tmp)
			pw, pwRSS = append(pw, ms(d)), append(pwRSS, rss)
		})
		progress(i, n)
	}
	for i := 0; i < *flagTail; i++ {
		d, _ := deathOnce(wTail, tmp)
		tl = append(tl, ms(d))
	}
	verbose("watchpid latency ms", wp)
	verbose("pidwait latency ms", pw)
	verbose("tail latency ms", tl)
	a, b := summarize(wp), summarize(pw)
	rows := []row{{
		metric: "death latency: watchpid vs pidwait", unit: "ms", a: a, b: b,
		target:  "≤1.1×+0.3ms",
		verdict: verdict(a.med <= 1.1*b.med+0.3),
	}}
	if len(tl) > 0 {
		rows = append(rows, row{metric: "death latency: watchpid vs tail --pid", unit: "ms",
			a: a, b: summarize(tl), target: "(info)", noRatio: true})
	}
	ra, rb := summarize(kib2mib(wpRSS)), summarize(kib2mib(pwRSS))
	rows = append(rows, row{metric: "RSS waiting: watchpid vs pidwait", unit: "MiB", a: ra, b: rb,
		target: "≤8MiB", verdict: verdict(slices.Max(kib2mib(wpRSS)) <= 8)})
	return rows
}

// ---- 2. stop a TERM-obeying process --------------------------------------

// stopOnce starts a target (argv), waits until ready(pid), then runs the
// stopper on it and returns the wall time until the stopper returned and
// the target is gone (reaped by us, its parent, the moment it dies).
func stopOnce(target []string, ready func(int) bool, stopper func(pid int) []string, name string) time.Duration {
	tc, err := spawn(target, nil)
	must(err)
	defer tc.Kill()
	if ready != nil {
		if err := waitUntil(5*time.Second, func() bool { return ready(tc.Pid()) }); err != nil {
			panic(fmt.Sprintf("target for %s: %v", name, err))
		}
	}
	reaped := make(chan time.Time, 1)
	go func() { tc.Wait(); reaped <- time.Now() }()
	var errBuf bytes.Buffer
	r, w, err := os.Pipe()
	must(err)
	copied := make(chan struct{})
	go func() { io.Copy(&errBuf, r); r.Close(); close(copied) }()
	t0 := time.Now()
	sc, err := spawn(stopper(tc.Pid()), w)
	w.Close()
	must(err)
	st, err := waitLimit(sc, 20*time.Second, name)
	t1 := time.Now()
	must(err)
	<-copied
	select {
	case gone := <-reaped:
		if gone.After(t1) {
			t1 = gone
		}
	case <-time.After(10 * time.Second):
		panic(fmt.Sprintf("%s returned but the target is still alive", name))
	}
	if !st.Success() {
		panic(fmt.Sprintf("%s exited %v: %s", name, st, errBuf.String()))
	}
	return t1.Sub(t0)
}

var (
	sbStop  = func(pid int) []string { return []string{bin.stopbounded, strconv.Itoa(pid)} }
	ssdArgs = func(sched string) func(pid int) []string {
		return func(pid int) []string {
			return []string{"start-stop-daemon", "--stop", "--quiet", "--oknodo",
				"--retry", sched, "--pid", strconv.Itoa(pid)}
		}
	}
)

func benchStop() []row {
	n := *flagN
	fmt.Fprintf(os.Stderr, "2. stop a TERM-obeying process: %d × stopbounded / start-stop-daemon --retry TERM/5/KILL/5\n", n)
	var sb, ssd []float64
	target := []string{"sleep", "1000"}
	for i := 0; i < n; i++ {
		inTurn(i, func() {
			sb = append(sb, ms(stopOnce(target, nil, sbStop, "stopbounded")))
		}, func() {
			ssd = append(ssd, ms(stopOnce(target, nil, ssdArgs("TERM/5/KILL/5"), "start-stop-daemon")))
		})
		progress(i, n)
	}
	verbose("stopbounded ms", sb)
	verbose("start-stop-daemon ms", ssd)
	a, b := summarize(sb), summarize(ssd)
	return []row{{metric: "stop TERM-obeying: stopbounded vs s-s-d", unit: "ms", a: a, b: b,
		target: "≤0.5×", verdict: verdict(a.med <= 0.5*b.med)}}
}

// ---- 3. overshoot past a 1 s grace on a TERM-ignoring process ------------

func benchOvershoot() []row {
	n := *flagSlow
	fmt.Fprintf(os.Stderr, "3. TERM-ignoring process, 1 s grace: %d × stopbounded --grace 1 / start-stop-daemon --retry TERM/1/KILL/5\n", n)
	target := []string{"sh", "-c", `trap "" TERM; exec sleep 1000`}
	ready := func(pid int) bool { return ignoresTERM(pid, "sleep") }
	sbGrace := func(pid int) []string {
		return []string{bin.stopbounded, "--grace", "1", strconv.Itoa(pid)}
	}
	var sb, ssd []float64
	for i := 0; i < n; i++ {
		inTurn(i, func() {
			sb = append(sb, ms(stopOnce(target, ready, sbGrace, "stopbounded --grace 1"))-1000)
		}, func() {
			ssd = append(ssd, ms(stopOnce(target, ready, ssdArgs("TERM/1/KILL/5"), "start-stop-daemon"))-1000)
		})
		progress(i, n)
	}
	verbose("stopbounded overshoot ms", sb)
	verbose("start-stop-daemon overshoot ms", ssd)
	a, b := summarize(sb), summarize(ssd)
	return []row{{metric: "overshoot past 1s grace: stopbounded vs s-s-d", unit: "ms", a: a, b: b,
		target: "≤10ms (med+max)", verdict: verdict(a.med <= 10 && a.max <= 10), noRatio: true}}
}

// ---- 4. start-up ---------------------------------------------------------

func benchStartup() []row {
	n := *flagN
	cmds := [][]string{
		{bin.stopbounded, "--version"},
		{bin.watchpid, "--version"},
		{"/bin/true"},
		{"flock", "--version"},
	}
	fmt.Fprintf(os.Stderr, "4. start-up (fork+exec+wait): %d × each of %d commands, rotating order\n", n, len(cmds))
	once := func(argv []string) float64 {
		t0 := time.Now()
		c, err := spawn(argv, nil)
		must(err)
		st, err := c.Wait()
		d := time.Since(t0)
		must(err)
		if !st.Success() {
			panic(fmt.Sprintf("%v exited %v", argv, st))
		}
		return ms(d)
	}
	for _, c := range cmds { // warm the page cache
		once(c)
	}
	samples := make([][]float64, len(cmds))
	runs := make([]func(), len(cmds))
	for j := range cmds {
		runs[j] = func() { samples[j] = append(samples[j], once(cmds[j])) }
	}
	for i := 0; i < n; i++ {
		inTurn(i, runs...)
		progress(i, n)
	}
	s := make([]summary, len(cmds))
	for j := range cmds {
		verbose(strings.Join(cmds[j], " ")+" ms", samples[j])
		s[j] = summarize(samples[j])
	}
	sb, wp, tr, fl := s[0], s[1], s[2], s[3]
	return []row{
		{metric: "start-up: stopbounded --version vs /bin/true", unit: "ms", a: sb, b: tr,
			target: "≤2.5×", verdict: verdict(sb.med <= 2.5*tr.med)},
		{metric: "start-up: stopbounded --version vs flock --version", unit: "ms", a: sb, b: fl,
			target: "≤1.8×", verdict: verdict(sb.med <= 1.8*fl.med)},
		{metric: "start-up: watchpid --version vs /bin/true", unit: "ms", a: wp, b: tr,
			target: "≤2.5×", verdict: verdict(wp.med <= 2.5*tr.med)},
		{metric: "start-up: watchpid --version vs flock --version", unit: "ms", a: wp, b: fl,
			target: "≤1.8×", verdict: verdict(wp.med <= 1.8*fl.med)},
	}
}

// ---- helpers (statistics and output: table.go) ---------------------------

func progress(i, n int) {
	if (i+1)%50 == 0 && i+1 < n {
		fmt.Fprintf(os.Stderr, "   … %d/%d\n", i+1, n)
	}
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}
