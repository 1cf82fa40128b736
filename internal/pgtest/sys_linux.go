package pgtest

import "syscall"

// dieWithParent makes the postmaster shut down (SIGQUIT: immediate) when
// the test binary that started it dies, however it dies.
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGQUIT }
