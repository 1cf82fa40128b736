//go:build linux

package main

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ---- statistics and output -----------------------------------------------

type summary struct {
	n                  int
	med, p90, min, max float64
}

func summarize(xs []float64) summary {
	if len(xs) == 0 {
		return summary{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return summary{n: len(s), med: quantile(s, 0.5), p90: quantile(s, 0.9), min: s[0], max: s[len(s)-1]}
}

// quantile interpolates linearly between the closest ranks of sorted s.
func quantile(s []float64, q float64) float64 {
	pos := q * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(s)-1)
	return s[lo] + (pos-float64(lo))*(s[hi]-s[lo])
}

type row struct {
	metric, unit string
	a, b         summary
	target       string
	verdict      string
	noRatio      bool
}

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}

func printTable(rows []row) {
	fmt.Printf("\n%-52s %-24s %-24s %7s  %-16s %s\n", "metric", "tether med (p90) [max]", "peer med (p90) [max]", "ratio", "target", "result")
	fmt.Println(strings.Repeat("-", 136))
	for _, r := range rows {
		ratio := "-"
		if !r.noRatio && r.b.med > 0 {
			ratio = num(r.a.med/r.b.med) + "×"
		}
		v := r.verdict
		if v == "" {
			v = "-"
		}
		fmt.Printf("%-52s %-24s %-24s %7s  %-16s %s\n", r.metric, cell(r.a, r.unit), cell(r.b, r.unit), ratio, r.target, v)
	}
}

func cell(s summary, unit string) string {
	if s.n == 0 {
		return "-"
	}
	return fmt.Sprintf("%s (%s) [%s] %s", num(s.med), num(s.p90), num(s.max), unit)
}

// num prints three significant digits without exponents.
func num(x float64) string {
	switch a := math.Abs(x); {
	case a >= 100:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(x, 'f', 2, 64)
	}
	return strconv.FormatFloat(x, 'f', 3, 64)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func kib2mib(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = x / 1024
	}
	return out
}

func verbose(what string, xs []float64) {
	if !*flagV {
		return
	}
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(x, 'f', 3, 64)
	}
	fmt.Fprintf(os.Stderr, "  %s: %s\n", what, strings.Join(parts, " "))
}
