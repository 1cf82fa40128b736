//go:build linux

// Command startup benchmarks ledger's start-up against a static Go hello
// world (CGO_ENABLED=0, built here the same way), in one interleaved run:
// every iteration runs each command once, rotating which goes first, so
// that machine noise hits all of them alike. See bench/README.md and issue
// 19 ("no grammar built on the hot path").
//
//	go run ./bench/startup [-n 300] [-bin DIR] [-v]
//
// Per command it reports the medians of the wall time (fork+exec+wait), of
// the child's CPU time (user+system, from wait4's rusage: steadier than
// wall time on a loaded machine) and of its minor page faults, and the
// ratios to hello world. Exit status: 0 every target met, 1 a target
// missed, 3 setup failed.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/tether-sh/tether/bench/internal/measure"
)

var (
	flagN   = flag.Int("n", 300, "iterations per command")
	flagBin = flag.String("bin", "", "use the ledger already built in `DIR` instead of building it")
	flagV   = flag.Bool("v", false, "print every sample on stderr")
	flagX   = flag.String("extra", "", "also measure these `programs` (comma-separated, each a path and its arguments split at spaces; any exit status), for diagnosis or another build")
)

const helloSrc = `package main

import "fmt"

func main() { fmt.Println("hello, world") }
`

// command is one measured command line and the exit status it must have.
type command struct {
	name string
	argv []string
	env  []string
	exit int
	// target is the bound on the ratio of its medians to hello world's
	// (0: reported only).
	target float64
}

func main() {
	flag.Parse()
	os.Exit(run())
}

func run() int {
	tmp, err := os.MkdirTemp("", "tether-startup-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "startup:", err)
		return 3
	}
	defer os.RemoveAll(tmp)
	ledger, helloBin, floorBin, err := build(tmp)
	if err != nil {
		fmt.Fprintln(os.Stderr, "startup:", err)
		return 3
	}
	store := filepath.Join(tmp, "store")
	env := os.Environ()
	cmds := []command{
		{name: "hello world (static Go)", argv: []string{helloBin}},
		// What ledger paid before it left kong to tether-pg.
		{name: "hello world linking kong, kongplete", argv: []string{floorBin}},
		{name: "ledger --version", argv: []string{ledger, "--version"}, target: 1.15},
		// run's start: parsed and dispatched to run's Run, which refuses
		// the empty CMD (a runner's usage error, 125) before it opens the store.
		{name: "ledger run's start", argv: []string{ledger, "--ledger", store, "run", "job", "--deadline", "1m", "--"}, exit: 125, target: 1.15},
		// The same parsed by kong's model: tether-pg, built beside ledger
		// (TETHER_NO_SHORTCUTS no longer sends ledger's lines there).
		{name: "ledger run's start, kong (tether-pg ledger)", argv: []string{filepath.Join(filepath.Dir(ledger), "tether-pg"), "ledger", "--ledger", store, "run", "job", "--deadline", "1m", "--"}, exit: 125},
		{name: "ledger run JOB -- true (the one-shot cycle)", argv: []string{ledger, "--ledger", store, "run", "job", "--", "true"}},
		// (the warm-up's one-shot cycle made the store)
		{name: "ledger show ID --field status", argv: []string{ledger, "--ledger", store, "show", "0dn81anxuj0hf-51gz31", "--field", "status"}, exit: 1},
	}
	if *flagX != "" {
		for _, x := range strings.Split(*flagX, ",") {
			argv := strings.Fields(x)
			// any exit status: an older build's refused run (125), say
			cmds = append(cmds, command{name: filepath.Base(x), argv: argv, exit: -1})
		}
	}
	for i := range cmds {
		if cmds[i].env == nil {
			cmds[i].env = env
		}
		if _, err := measure.Once(cmds[i].argv, cmds[i].env, cmds[i].exit); err != nil { // warm the page cache, check the exit
			fmt.Fprintln(os.Stderr, "startup:", err)
			return 3
		}
	}
	samples := make([][]measure.Sample, len(cmds))
	for i := 0; i < *flagN; i++ {
		for k := range cmds {
			j := (i + k) % len(cmds)
			s, err := measure.Once(cmds[j].argv, cmds[j].env, cmds[j].exit)
			if err != nil {
				fmt.Fprintln(os.Stderr, "startup:", err)
				return 3
			}
			samples[j] = append(samples[j], s)
			if *flagV {
				fmt.Fprintf(os.Stderr, "%s\t%.3f ms\t%.3f ms cpu\t%.0f faults\n", cmds[j].name, s.Wall, s.CPU, s.Faults)
			}
		}
	}
	base := measure.Medians(samples[0])
	code := 0
	fmt.Printf("%d interleaved runs each; medians; ratio to hello world (wall, cpu)\n\n", *flagN)
	fmt.Printf("%-50s %8s %8s %7s %7s %7s %s\n", "command", "wall ms", "cpu ms", "faults", "×wall", "×cpu", "target")
	for j, c := range cmds {
		m := measure.Medians(samples[j])
		rw, rc := m.Wall/base.Wall, m.CPU/base.CPU
		verdict := ""
		if c.target > 0 {
			verdict = fmt.Sprintf("≤%.2f× ", c.target)
			if rw <= c.target {
				verdict += "PASS"
			} else {
				verdict += "MISS"
				code = 1
			}
		}
		fmt.Printf("%-50s %8.3f %8.3f %7.0f %7.2f %7.2f %s\n", c.name, m.Wall, m.CPU, m.Faults, rw, rc, verdict)
	}
	return code
}

// build builds ledger as install.sh does, with tether-pg beside it (kong's
// model, for the row without the generated parser), and hello world and
// kongfloor the same way.
func build(tmp string) (ledger, hello, floor string, err error) {
	flags := []string{"build", "-trimpath", "-ldflags", "-w -X github.com/tether-sh/tether/lib/cli.Version=0.1.0-bench"}
	ledger = filepath.Join(*flagBin, "ledger")
	if *flagBin == "" {
		ledger = filepath.Join(tmp, "ledger")
		if err := goBuild("", append(flags, "-o", tmp+"/", "./cmd/ledger", "./cmd/tether-pg")); err != nil {
			return "", "", "", err
		}
	}
	floor = filepath.Join(tmp, "kongfloor")
	if err := goBuild("", append(flags, "-o", floor, "./bench/startup/kongfloor")); err != nil {
		return "", "", "", err
	}
	src := filepath.Join(tmp, "hello")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", "", "", err
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(helloSrc), 0o644); err != nil {
		return "", "", "", err
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module hello\n"), 0o644); err != nil {
		return "", "", "", err
	}
	hello = filepath.Join(tmp, "hello-world")
	return ledger, hello, floor, goBuild(src, append(flags, "-o", hello, "."))
}

func goBuild(dir string, args []string) error {
	c := exec.Command("go", args...)
	c.Dir = dir
	c.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	c.Stdout, c.Stderr = os.Stderr, os.Stderr
	if err := c.Run(); err != nil {
		return fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
	}
	return nil
}
