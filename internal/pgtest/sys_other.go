//go:build !linux

package pgtest

import "syscall"

// dieWithParent is Linux's parent-death signal; elsewhere a killed test
// binary leaves its server to be stopped by hand.
func dieWithParent(a *syscall.SysProcAttr) {}
