package execution

import (
	"os"

	"golang.org/x/sys/unix"
)

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// kcmpFile is kcmp(2)'s KCMP_FILE: do two descriptors share one open
// file description?
const kcmpFile = 0

// sameDescription reports whether fds a and b of this process are one
// open file description (2>&1): kcmp(2), ok false where the kernel lacks
// it (CONFIG_CHECKPOINT_RESTORE) or refuses.
func sameDescription(a, b int) (same, ok bool) {
	pid := uintptr(os.Getpid())
	r, _, errno := unix.Syscall6(unix.SYS_KCMP, pid, pid, kcmpFile, uintptr(a), uintptr(b), 0)
	if errno != 0 {
		return false, false
	}
	return r == 0, true
}
