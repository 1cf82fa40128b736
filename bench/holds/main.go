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
	"strings"

	"github.com/tether-sh/tether/bench/internal/measure"

	"github.com/tether-sh/tether/internal/pgtest"
)

var (
	flagN  = flag.Int("n", 300, "iterations per command")
	flagPG = flag.Bool("pg", false, "also measure a PostgreSQL store (a throwaway server)")
	flagV  = flag.Bool("v", false, "print every sample on stderr")
)

// target bounds holds' median wall time as a multiple of show's.
const target = 1.15

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
		samples := make([][]measure.Sample, len(cmds))
		for i := -1; i < *flagN; i++ {
			for k := range cmds {
				j := (i + k + 1) % len(cmds)
				s, err := measure.Once(cmds[j], os.Environ(), 0)
				if err != nil {
					fmt.Fprintln(os.Stderr, "holds:", err)
					return 3
				}
				if i < 0 {
					continue // warm-up
				}
				samples[j] = append(samples[j], s)
				if *flagV {
					fmt.Fprintf(os.Stderr, "%s\t%s\t%.3f ms\t%.3f ms cpu\n", st.name, cmds[j][3], s.Wall, s.CPU)
				}
			}
		}
		show, holds := measure.Medians(samples[0]), measure.Medians(samples[1])
		r := holds.Wall / show.Wall
		verdict := fmt.Sprintf("≤%.2f× PASS", target)
		if r > target {
			verdict, code = fmt.Sprintf("≤%.2f× MISS", target), 1
		}
		fmt.Printf("%-26s %-34s %8.3f %8.3f %7s\n", st.name, "ledger show ID --field status", show.Wall, show.CPU, "")
		fmt.Printf("%-26s %-34s %8.3f %8.3f %7.2f %s\n", st.name, "ledger holds ID", holds.Wall, holds.CPU, r, verdict)
	}
	return code
}
