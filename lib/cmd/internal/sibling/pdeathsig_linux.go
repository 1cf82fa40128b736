package sibling

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// parentDeathSignal reports whether this thread has a parent-death
// signal; true when that cannot be read, to keep it safe.
func parentDeathSignal() bool {
	var sig int32
	if err := unix.Prctl(unix.PR_GET_PDEATHSIG, uintptr(unsafe.Pointer(&sig)), 0, 0, 0); err != nil {
		return true
	}
	return sig != 0
}
