package runner

import "golang.org/x/sys/unix"

// mountProc gives the gate's new mount namespace a /proc of its own PID
// namespace. Mounts are made private first, so that nothing propagates
// back to the namespace the runner lives in.
func mountProc() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return err
	}
	return unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
}
