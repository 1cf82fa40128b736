package ledger

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/tether-sh/tether/lib/proc"
)

// identity is where this process stands: its host name (a label), its
// boot and its PID namespace. An empty or zero part could not be read.
type identity struct {
	host  string
	boot  string
	pidns uint64
	// procErr is set when /proc belongs to another PID namespace: no PID
	// can be judged through it.
	procErr error
}

// localIdentity returns this process's identity, read once: none of it
// changes during a process's life but the host name, which is a label.
var localIdentity = sync.OnceValue(func() identity {
	var id identity
	id.host, _ = os.Hostname()
	id.boot, _ = proc.BootID()
	id.procErr = proc.CheckProcNS()
	if id.procErr == nil {
		id.pidns, _ = proc.PIDNamespace()
	}
	return id
})

// BootID returns this boot's id as owners record it, read once ("" when
// it cannot be read).
func BootID() string { return localIdentity().boot }

// LocalOwner returns the owner identity of process id (a PID of this
// process's PID namespace) on this host: host name, boot id, PID namespace
// and PID@START. A zero id.Start is looked up; a process that does not
// exist, or whose START differs from id.Start, is ErrBadInput: a dead
// process cannot own anything. Where /proc is not this PID namespace's the
// error wraps proc.ErrForeignProc: no process can be identified there.
func LocalOwner(id proc.ID) (Owner, error) {
	here := localIdentity()
	if here.procErr != nil {
		return Owner{}, here.procErr
	}
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
	if id.PID != os.Getpid() && proc.IsThread(id.PID) {
		// Its end is not its process's: recover would judge a live
		// process's claim by one of its threads.
		return Owner{}, badInputf("owner %d is a thread, not a process", id.PID)
	}
	return Owner{Host: here.host, BootID: here.boot, PIDNS: here.pidns, PID: cur.PID, Start: cur.Start}, nil
}

// liveness is what can be said about a recorded process.
type liveness int

const (
	uncertain liveness = iota // another machine or PID namespace, or identity unreadable: never judged
	alive
	dead
)

// judgeProcess decides whether the process id, a PID of the PID namespace
// of owner o (o's own PID, or its payload child's: an owner records its
// child by the PID its own namespace gives it), is still running, as seen
// from this process. The boot id says which machine and boot: an owner of
// another boot died with it when the host name is this one's, and is on
// another machine (uncertain) when it is not. Within this boot the host
// name is only a label (a renamed host, or a container with a host name of
// its own, is the same machine); a PID is judged only when o's PID
// namespace is this process's, and is uncertain from any other, unless
// that namespace is gone and took its processes with it (which only the
// initial PID namespace can see: proc.PIDNamespaceGone). An owner
// recorded without a PID namespace (by a version that did not record it)
// is taken to be of this process's namespace, as that version did.
func judgeProcess(o Owner, id proc.ID) (liveness, string) {
	here := localIdentity()
	switch {
	case o.BootID == "" || here.boot == "":
		return uncertain, "boot id unknown"
	case o.BootID != here.boot && o.Host != "" && o.Host == here.host:
		return dead, fmt.Sprintf("%s died with boot %s", id, o.BootID)
	case o.BootID != here.boot:
		return uncertain, "on another host"
	case here.procErr != nil:
		return uncertain, here.procErr.Error()
	case here.pidns == 0:
		return uncertain, "this process's PID namespace is unknown"
	case o.PIDNS != 0 && o.PIDNS != here.pidns:
		// Its PIDs are not ours; but a namespace with no process left
		// took all of them with it.
		if gone, err := proc.PIDNamespaceGone(o.PIDNS); err == nil && gone {
			return dead, fmt.Sprintf("%s died with its PID namespace %d", id, o.PIDNS)
		}
		return uncertain, fmt.Sprintf("in another PID namespace (pidns %d, not %d)", o.PIDNS, here.pidns)
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

// sameNamespace reports whether o's PIDs are PIDs of this process's
// namespace, on this boot: whether its processes can be judged here.
func sameNamespace(o Owner) bool {
	here := localIdentity()
	return here.boot != "" && o.BootID == here.boot && here.procErr == nil &&
		here.pidns != 0 && (o.PIDNS == 0 || o.PIDNS == here.pidns)
}
