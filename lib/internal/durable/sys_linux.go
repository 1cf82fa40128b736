package durable

import "golang.org/x/sys/unix"

// syncData is fdatasync(2): the data and what is needed to read it back.
func syncData(fd int) error { return unix.Fdatasync(fd) }
