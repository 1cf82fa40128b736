// Package measure times one run of a command line the way the benchmarks
// under bench/ compare tools: fork and exec with stdio on /dev/null, then
// wait4, which gives the child's CPU time and minor page faults.
package measure

import (
	"fmt"
	"os"
	"slices"
	"syscall"
	"time"
)

// Sample is one run: wall and CPU time in milliseconds, and minor page
// faults.
type Sample struct{ Wall, CPU, Faults float64 }

var devnull *os.File

// Once runs argv with env, stdio on /dev/null, and measures it. Its exit
// status must be exit (-1: any).
func Once(argv, env []string, exit int) (Sample, error) {
	if devnull == nil {
		var err error
		if devnull, err = os.OpenFile(os.DevNull, os.O_RDWR, 0); err != nil {
			return Sample{}, err
		}
	}
	fd := devnull.Fd()
	attr := &syscall.ProcAttr{Env: env, Files: []uintptr{fd, fd, fd}}
	t0 := time.Now()
	pid, err := syscall.ForkExec(argv[0], argv, attr)
	if err != nil {
		return Sample{}, err
	}
	var ws syscall.WaitStatus
	var ru syscall.Rusage
	if _, err := syscall.Wait4(pid, &ws, 0, &ru); err != nil {
		return Sample{}, err
	}
	wall := time.Since(t0)
	if exit != -1 && ws.ExitStatus() != exit {
		return Sample{}, fmt.Errorf("%q exited %d; want %d", argv, ws.ExitStatus(), exit)
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return Sample{Wall: ms(wall), CPU: ms(cpu), Faults: float64(ru.Minflt)}, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Medians is the median of each measure of ss.
func Medians(ss []Sample) Sample {
	med := func(f func(Sample) float64) float64 {
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
	return Sample{
		Wall:   med(func(s Sample) float64 { return s.Wall }),
		CPU:    med(func(s Sample) float64 { return s.CPU }),
		Faults: med(func(s Sample) float64 { return s.Faults }),
	}
}
