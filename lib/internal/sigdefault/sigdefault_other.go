//go:build !linux

package sigdefault

import (
	"os"
	"syscall"
)

const sigPWR = 0

// die ends the process as near to the signal's default action as the
// platform allows without the raw sigaction: exit 128+N.
func die(sig syscall.Signal) { os.Exit(128 + int(sig)) }
