//go:build linux

// Command holds benchmarks the fencing verifier, `ledger holds ID`,
// against `ledger show ID --field status` on the same live execution, in
// one interleaved run per store: the file store, and with -pg a
// throwaway PostgreSQL server (internal/pgtest). A payload calls holds in
// a loop before its writes: it must cost no more than a show. See
// bench/README.md and issue 45 ("Fast enough to call in a loop").
//
//	go run ./bench/holds [-n 300] [-pg] [-v]
//
// It prints the medians of wall time (fork+exec+wait) and of the child's
// CPU time (wait4's rusage), and the ratio of holds to show. Exit status:
// 0 holds ≤ 1.15 × show on every store, 1 not, 3 setup failed.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/tether-sh/tether/internal/pgtest"
)

var (
	flagN  = flag.Int("n", 300, "iterations per command")
	flagPG = flag.Bool("pg", false, "also measure a PostgreSQL store (a throwaway server)")
	flagV  = flag.Bool("v", false, "print every sample on stderr")
)

// target bounds holds' median wall time as a multiple of show's.
const target = 1.15

type sample struct{ wall, cpu float64 }

func main() {
	flag.Parse()
	os.Exit(run())
}

func run() int {
	tmp, err := os.MkdirTemp("", "tether-holds-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "holds:", err)
		return 3
	}
	defer os.RemoveAll(tmp)
	flags := []string{"build", "-trimpath", "-ldflags", "-w -X github.com/tether-sh/tether/lib/cli.Version=0.1.0-bench", "-o", tmp + "/", "./cmd/ledger", "./cmd/tether-pg"}
	c := exec.Command("go", flags...)
	c.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	c.Stdout, c.Stderr = os.Stderr, os.Stderr
	if err := c.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "holds: go build:", err)
		return 3
	}
	ledger := filepath.Join(tmp, "ledger")
	stores := []struct{ name, loc string }{{"file store", filepath.Join(tmp, "store")}}
	if *flagPG {
		srv, err := pgtest.StartMain()
		if err != nil {
			fmt.Fprintln(os.Stderr, "holds:", err)
			return 3
		}
		defer srv.Stop()
		dsn, err := srv.CreateDB()
		if err != nil {
			fmt.Fprintln(os.Stderr, "holds:", err)
			return 3
		}
		stores = append(stores, struct{ name, loc string }{"PostgreSQL (unix socket)", dsn})
	}
	code := 0
	fmt.Printf("%d interleaved runs each; medians\n\n", *flagN)
	fmt.Printf("%-26s %-34s %8s %8s %7s %s\n", "store", "command", "wall ms", "cpu ms", "×wall", "target")
	for _, st := range stores {
		// A live claim, owned by this process: holds answers 0.
		out, err := exec.Command(ledger, "--ledger", st.loc, "claim", "bench", "--owner", fmt.Sprint(os.Getpid())).Output()
		if err != nil {
			fmt.Fprintln(os.Stderr, "holds: ledger claim:", err)
			return 3
		}
		id := strings.TrimSpace(string(out))
		cmds := [][]string{
			{ledger, "--ledger", st.loc, "show", id, "--field", "status"},
			{ledger, "--ledger", st.loc, "holds", id},
		}
		samples := make([][]sample, len(cmds))
		for i := -1; i < *flagN; i++ {
			for k := range cmds {
				j := (i + k + 1) % len(cmds)
				s, err := once(cmds[j])
				if err != nil {
					fmt.Fprintln(os.Stderr, "holds:", err)
					return 3
				}
				if i < 0 {
					continue // warm-up
				}
				samples[j] = append(samples[j], s)
				if *flagV {
					fmt.Fprintf(os.Stderr, "%s\t%s\t%.3f ms\t%.3f ms cpu\n", st.name, cmds[j][3], s.wall, s.cpu)
				}
			}
		}
		show, holds := medians(samples[0]), medians(samples[1])
		r := holds.wall / show.wall
		verdict := fmt.Sprintf("≤%.2f× PASS", target)
		if r > target {
			verdict, code = fmt.Sprintf("≤%.2f× MISS", target), 1
		}
		fmt.Printf("%-26s %-34s %8.3f %8.3f %7s\n", st.name, "ledger show ID --field status", show.wall, show.cpu, "")
		fmt.Printf("%-26s %-34s %8.3f %8.3f %7.2f %s\n", st.name, "ledger holds ID", holds.wall, holds.cpu, r, verdict)
	}
	return code
}

var devnull *os.File

// once runs argv with stdio on /dev/null, which must exit 0, and measures it.
func once(argv []string) (sample, error) {
	if devnull == nil {
		var err error
		if devnull, err = os.OpenFile(os.DevNull, os.O_RDWR, 0); err != nil {
			return sample{}, err
		}
	}
	fd := devnull.Fd()
	attr := &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{fd, fd, fd}}
	t0 := time.Now()
	pid, err := syscall.ForkExec(argv[0], argv, attr)
	if err != nil {
		return sample{}, err
	}
	var ws syscall.WaitStatus
	var ru syscall.Rusage
	if _, err := syscall.Wait4(pid, &ws, 0, &ru); err != nil {
		return sample{}, err
	}
	wall := time.Since(t0)
	if ws.ExitStatus() != 0 {
		return sample{}, fmt.Errorf("%q exited %d; want 0", argv[3:], ws.ExitStatus())
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return sample{wall: ms(wall), cpu: ms(cpu)}, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func medians(ss []sample) sample {
	med := func(f func(sample) float64) float64 {
		xs := make([]float64, len(ss))
		for i, s := range ss {
			xs[i] = f(s)
		}
		slices.Sort(xs)
		if len(xs)%2 == 1 {
			return xs[len(xs)/2]
		}
		return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
	}
	return sample{wall: med(func(s sample) float64 { return s.wall }), cpu: med(func(s sample) float64 { return s.cpu })}
}
