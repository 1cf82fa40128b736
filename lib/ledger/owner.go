package ledger

import (
	"errors"
	"fmt"
	"os"

	"github.com/tether-sh/tether/lib/proc"
)

// localIdentity returns this host's name and boot id; either is empty when
// it cannot be read, which makes owners recorded with it uncertain rather
// than dead.
func localIdentity() (host, boot string) {
	host, _ = os.Hostname()
	boot, _ = proc.BootID()
	return host, boot
}

// LocalOwner returns the owner identity of process id on this host. A zero
// id.Start is looked up; a process that does not exist, or whose START
// differs from id.Start, is ErrBadInput: a dead process cannot own anything.
func LocalOwner(id proc.ID) (Owner, error) {
	cur, err := proc.Lookup(id.PID)
	if err != nil {
		if errors.Is(err, proc.ErrGone) || errors.Is(err, proc.ErrBadID) {
			return Owner{}, badInputf("owner %s is not a running process", id)
		}
		return Owner{}, fmt.Errorf("owner %s: %w", id, err)
	}
	if id.Start != 0 && cur.Start != id.Start {
		return Owner{}, badInputf("owner %s is not a running process (pid %d started at %d)", id, id.PID, cur.Start)
	}
	host, boot := localIdentity()
	return Owner{Host: host, BootID: boot, PID: cur.PID, Start: cur.Start}, nil
}

// liveness is what can be said about a recorded process.
type liveness int

const (
	uncertain liveness = iota // another host, or identity unreadable: never judged
	alive
	dead
)

// judgeProcess decides whether the process id recorded on host/boot is
// still running, as seen from this host and boot.
func (s *Store) judgeProcess(host, boot string, id proc.ID) (liveness, string) {
	myHost, myBoot := s.identity()
	switch {
	case host == "" || myHost == "" || host != myHost:
		return uncertain, "on another host"
	case boot == "" || myBoot == "":
		return uncertain, "boot id unknown"
	case boot != myBoot:
		return dead, fmt.Sprintf("%s died with boot %s", id, boot)
	}
	ok, err := proc.Alive(id)
	switch {
	case err != nil:
		return uncertain, err.Error()
	case ok:
		return alive, id.String() + " is alive"
	}
	return dead, id.String() + " is gone"
}
