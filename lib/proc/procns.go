package proc

import "errors"

// ErrForeignProc is the error of CheckProcNS: /proc was mounted for another
// PID namespace, so /proc/N is not the process this namespace calls N.
var ErrForeignProc = errors.New("/proc is not this PID namespace's")
