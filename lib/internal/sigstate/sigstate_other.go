//go:build !linux

package sigstate

// sigStkflt: no such signal here.
const sigStkflt = 0

// load knows nothing beyond Linux: the tools refuse to run there.
func load() (mask uint64, exact bool) { return 0, false }

// Restore does nothing beyond Linux.
func Restore() {}
