//go:build !linux

package scripttest

import "time"

// The script commands are for Linux, where the tools work; elsewhere the
// package only compiles, so that a suite importing lib builds.

// startedAt is unknown here: the zero time.
func startedAt(start uint64) time.Time { return time.Time{} }

// ended is unknown here: false.
func ended(pid int) bool { return false }

// scenarioCmdline finds no process here.
func scenarioCmdline(pid int, work string) (string, bool) { return "", false }
