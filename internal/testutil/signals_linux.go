package testutil

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// ignoredSignals lists the signals this process ignores (SigIgn in
// /proc/self/status).
func ignoredSignals() ([]os.Signal, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		hex, ok := strings.CutPrefix(sc.Text(), "SigIgn:")
		if !ok {
			continue
		}
		mask, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
		if err != nil {
			return nil, fmt.Errorf("SigIgn %q: %w", hex, err)
		}
		var sigs []os.Signal
		for n := 1; n <= 64; n++ {
			if mask&(1<<(n-1)) != 0 {
				sigs = append(sigs, syscall.Signal(n))
			}
		}
		return sigs, nil
	}
	return nil, fmt.Errorf("no SigIgn in /proc/self/status")
}
