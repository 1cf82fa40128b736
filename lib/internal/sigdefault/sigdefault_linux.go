package sigdefault

import (
	"syscall"

	"github.com/tether-sh/tether/lib/internal/sigstate"
)

const sigPWR = syscall.SIGPWR

// die sets sig's action back to the default and raises it: the kernel
// ends the process as it would a C program's. It does not return.
func die(sig syscall.Signal) {
	sigstate.Default(sig)
	syscall.Kill(syscall.Getpid(), sig)
	select {}
}
