//go:build !linux

package sigstate

import "syscall"

// sigStkflt: no such signal here.
const sigStkflt = 0

// load knows nothing beyond Linux: the tools refuse to run there.
func load() (mask uint64, exact bool) { return 0, false }

// Restore does nothing beyond Linux.
func Restore() {}

// Ignore does nothing beyond Linux.
func Ignore(sig syscall.Signal) {}

// Default does nothing beyond Linux.
func Default(sig syscall.Signal) {}
