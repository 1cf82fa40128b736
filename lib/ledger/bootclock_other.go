//go:build !linux

package ledger

import "time"

// BootClock is a monotonic clock: elsewhere Go's own, which may stop
// while the machine is suspended (Linux's counts through it).
func BootClock() time.Duration { return time.Since(processStart) }

var processStart = time.Now()
