package ledger

import (
	"time"

	"golang.org/x/sys/unix"
)

// BootClock reads CLOCK_BOOTTIME: a monotonic clock that, unlike Go's
// (CLOCK_MONOTONIC), keeps counting while the machine is suspended, as a
// lease on a database's clock does.
func BootClock() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return time.Since(processStart) // not seen on Linux ≥ 2.6.39
	}
	return time.Duration(ts.Nano())
}

var processStart = time.Now()
