package pgtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/tether-sh/tether/lib/proc"
)

// Options are the faults a server started by StartMainWith can be given;
// the zero value is StartMain's server.
type Options struct {
	// Killable runs the postmaster as init of a PID namespace of its own
	// (unshare(1), as root), so that Kill can kill every process of the
	// server at once and leave no orphan behind: the kernel kills and
	// reaps the backends of a namespace whose init died, which the
	// machine's own init may never do.
	Killable bool
	// FakeClock runs the server under libfaketime, its wall clock moved
	// by SetClock (its monotonic clock untouched). Without libfaketime
	// StartMainWith fails with an error wrapping ErrNoFaketime.
	FakeClock bool
}

// ErrNoFaketime reports that libfaketime (Debian's package faketime) is
// not installed.
var ErrNoFaketime = errors.New("no libfaketime in /usr/lib/*/faketime (Debian: apt-get install faketime)")

// childOf returns the PID of a child of pid, or 0.
func childOf(pid int) int {
	kids, err := proc.Children(pid)
	if err != nil || len(kids) == 0 {
		return 0
	}
	return kids[0].PID
}

// faketimeLib is the path of libfaketime, or an error wrapping
// ErrNoFaketime.
func faketimeLib() (string, error) {
	libs, _ := filepath.Glob("/usr/lib/*/faketime/libfaketime.so.1")
	if len(libs) == 0 {
		return "", fmt.Errorf("pgtest: %w", ErrNoFaketime)
	}
	return libs[0], nil
}

func (s *Server) clockFile() string { return filepath.Join(s.dir, "clock") }

// SetClock sets the server's wall clock to the real time plus offset (a
// jump, forward or back: now(), and so every lease the server judges,
// moves with it), within a second, as seen by every process of the
// server. Whole seconds only; the server needs Options.FakeClock.
func (s *Server) SetClock(offset time.Duration) error {
	if !s.opts.FakeClock {
		return errors.New("pgtest: SetClock needs a server started with Options.FakeClock")
	}
	tmp := s.clockFile() + ".tmp"
	if err := os.WriteFile(tmp, fmt.Appendf(nil, "%+d\n", int64(offset/time.Second)), 0o644); err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	if err := os.Rename(tmp, s.clockFile()); err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	return nil
}

// Kill kills the server as kill -9 of every process of it would (a server
// the OOM killer took down, or its machine lost): the postmaster dies of
// SIGKILL as init of its PID namespace, and the kernel kills its backends
// with it; no checkpoint, no goodbye to a client. Then it starts the
// server again on the same data (crash recovery from the WAL) and waits
// until it is ready. The server needs Options.Killable.
func (s *Server) Kill() error {
	if !s.opts.Killable {
		return errors.New("pgtest: Kill needs a server started with Options.Killable")
	}
	if s.stopped.Load() {
		return errors.New("pgtest: server stopped")
	}
	syscall.Kill(s.postmaster, syscall.SIGKILL)
	<-s.exited
	return s.run()
}
