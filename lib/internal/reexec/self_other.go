//go:build !linux

package reexec

import "os"

// selfExe is this process's own executable as the OS reports it.
var selfExe, _ = os.Executable()
