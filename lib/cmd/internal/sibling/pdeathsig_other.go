//go:build !linux

package sibling

// parentDeathSignal: only Linux has parent-death signals.
func parentDeathSignal() bool { return false }
