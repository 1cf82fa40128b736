package gate

import (
	"syscall"

	"github.com/tether-sh/tether/lib/internal/reexec/marker"
	"github.com/tether-sh/tether/lib/internal/sigstate"
)

func init() {
	if v, ok := syscall.Getenv(marker.Env); !ok || v != Role {
		return
	}
	args, ok := cmdline()
	if !ok || len(args) < 5 || args[1] != marker.Flag(Role) {
		return
	}
	syscall.Exit(run(args[2], args[3], args[4:]))
}

// splitMode splits the gate's mode argument, "proc" or "-" then, after a
// ':', the numbers of the synchronous faults to ignore before the exec
// (decimal, ','-separated), into the mode and those signals.
func splitMode(arg string) (mode string, faults []syscall.Signal) {
	mode = arg
	for i := 0; i < len(arg); i++ {
		if arg[i] != ':' {
			continue
		}
		mode = arg[:i]
		n := 0
		for j := i + 1; j <= len(arg); j++ {
			if j == len(arg) || arg[j] == ',' {
				if n > 0 && n <= 64 {
					faults = append(faults, syscall.Signal(n))
				}
				n = 0
				continue
			}
			if c := arg[j]; c >= '0' && c <= '9' && n <= 64 {
				n = n*10 + int(c-'0')
			}
		}
		break
	}
	return mode, faults
}

// run waits for the release and execs path with argv; it returns only when
// it runs nothing, with the gate's exit status.
func run(arg, path string, argv []string) int {
	mode, faults := splitMode(arg)
	syscall.CloseOnExec(ErrorFD)
	var release [1]byte
	if !readFull(ReleaseFD, release[:]) || (release[0] != Release && release[0] != Stamped) {
		// The runner is gone: it never recorded us. Run nothing.
		return Status
	}
	var stamp []byte
	if release[0] == Stamped {
		var n [1]byte
		if !readFull(ReleaseFD, n[:]) {
			return Status
		}
		stamp = make([]byte, n[0])
		if !readFull(ReleaseFD, stamp) {
			return Status
		}
	}
	syscall.Close(ReleaseFD)
	syscall.Unsetenv(marker.Env)
	env := syscall.Environ()
	setStamp(env, string(stamp))
	if mode == "proc" {
		if err := mountProc(); err != nil {
			fail(MountFailed, err)
			return Status
		}
	}
	// The runner started us with its caller's ignored signals ignored
	// (runner.KeepIgnored); our runtime replaced them by its handlers,
	// which exec would reset to the default action.
	sigstate.Restore()
	// The synchronous faults the runner's caller ignored: the runner's
	// runtime reset them in its child, so it names them (Faults).
	for _, sig := range faults {
		sigstate.Ignore(sig)
	}
	err := syscall.Exec(path, argv, env)
	fail(ExecFailed, err)
	if err == syscall.ENOENT {
		return 127
	}
	return 126
}

// setStamp puts kv, NAME=VALUE, in env in place of NAME's entry (none:
// nothing). The gate imports only syscall: no strings.
func setStamp(env []string, kv string) {
	eq := 0
	for eq < len(kv) && kv[eq] != '=' {
		eq++
	}
	if eq == 0 || eq == len(kv) {
		return
	}
	for i, e := range env {
		if len(e) > eq && e[:eq+1] == kv[:eq+1] {
			env[i] = kv
		}
	}
}

// mountProc gives the gate's new mount namespace a /proc of its own PID
// namespace. Mounts are made private first, so that nothing propagates
// back to the namespace the runner lives in.
func mountProc() error {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return err
	}
	return syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "")
}

// fail tells the runner why the gate runs nothing.
func fail(kind byte, err error) {
	errno, ok := err.(syscall.Errno)
	if !ok {
		errno = syscall.EIO
	}
	e := uint32(errno)
	msg := []byte{kind, byte(e), byte(e >> 8), byte(e >> 16), byte(e >> 24)}
	syscall.Write(ErrorFD, msg)
}

// readFull reads len(b) bytes from fd; false at end-of-file or an error.
func readFull(fd int, b []byte) bool {
	for len(b) > 0 {
		n, err := syscall.Read(fd, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return false
		}
		b = b[n:]
	}
	return true
}

// cmdline returns this process's arguments from /proc/self/cmdline: the
// os package, which holds them too, is not initialised yet.
func cmdline() ([]string, bool) {
	fd, err := syscall.Open("/proc/self/cmdline", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer syscall.Close(fd)
	var buf []byte
	chunk := make([]byte, 64<<10)
	for {
		n, err := syscall.Read(fd, chunk)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, false
		}
		if n == 0 {
			break
		}
		buf = append(buf, chunk[:n]...)
	}
	if len(buf) == 0 || buf[len(buf)-1] != 0 {
		return nil, false
	}
	return split(buf[:len(buf)-1]), true
}

// split splits b at NUL bytes; nothing for an empty b.
func split(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	var out []string
	start := 0
	for i, c := range b {
		if c == 0 {
			out = append(out, string(b[start:i]))
			start = i + 1
		}
	}
	return append(out, string(b[start:]))
}
