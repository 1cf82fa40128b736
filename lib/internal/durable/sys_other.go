//go:build !linux

package durable

import "golang.org/x/sys/unix"

// syncData is fsync(2) where fdatasync(2) is not offered.
func syncData(fd int) error { return unix.Fsync(fd) }
