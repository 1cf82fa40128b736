package stop

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/internal/reexec"
	"github.com/tether-sh/tether/lib/proc"
)

// ThawRole is the reexec role of the thaw guardian.
const ThawRole = "thaw"

func init() { reexec.Enter(ThawRole, thawMain) }

// Messages on the guardian's socket. "ready" carries the guardian's PID
// (4 bytes, little-endian); "hold" a member's PID and START (4 + 8 bytes)
// and, when the stopper has one, its pidfd as SCM_RIGHTS.
const (
	msgReady = 'R' // guardian → caller: it holds the socket and ignores signals
	msgHold  = 'H' // caller → guardian: continue this member if I die
	msgDone  = 'D' // caller → guardian: nothing is left frozen; exit
)

// guardReadyWait bounds the guardian's start.
const guardReadyWait = 10 * time.Second

// guardArg is the argument of the guardian proper; without it the role is
// the go-between that starts it and exits.
const guardArg = "guard"

// ThawGuard is a helper process that keeps a frozen tree from staying
// frozen when its stopper dies, even of SIGKILL, where no handler runs.
// The stopper hands it each member (PID, START and the pidfd when it has
// one) before it first stops the member; when the stopper's end of their
// socket closes without "done" — the stopper died — the guardian sends
// SIGCONT to every member it holds, then exits. A pidfd never names
// another process, and a member without one is continued only while its
// PID still has its START.
//
// The guardian is kept out of the tree its stopper belongs to: a
// go-between child starts it and exits, so that it is re-parented to init
// (or the nearest subreaper) instead of being the stopper's descendant,
// which a tree stop of the stopper's supervisor would freeze and kill
// with it. It runs in a session of its own, ignoring TERM, INT, HUP and
// QUIT, so that neither the signal nor the terminal's Ctrl-C that kills the
// stopper's group kills it too. A guardian that died anyway is noticed
// before every freeze (Ensure) and replaced.
type ThawGuard struct {
	sock  int
	pid   int
	gen   int   // counts the guardians started: a member is held by one
	ready bool  // the guardian said it is ready
	err   error // the first failed hand-over: the guardian is lost
}

// StartThawGuard starts a guardian. It does not wait for it: the first
// Hold does, so that the guardian's start overlaps the caller's own work.
func StartThawGuard() (*ThawGuard, error) {
	g := &ThawGuard{sock: -1}
	if err := g.start(); err != nil {
		return nil, err
	}
	return g, nil
}

// start starts a new guardian through the go-between.
func (g *ThawGuard) start() error {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("thaw guardian: socketpair: %w", err)
	}
	peer := os.NewFile(uintptr(fds[1]), "thaw-guardian")
	cmd := reexec.Command(ThawRole, nil)
	cmd.ExtraFiles = []*os.File{peer} // fd 3
	// A session of its own: a signal to the stopper's group, or the
	// terminal's, must not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	peer.Close()
	if err != nil {
		unix.Close(fds[0])
		return fmt.Errorf("thaw guardian: %w", err)
	}
	// The go-between exits once the guardian is started.
	go cmd.Wait()
	g.sock, g.pid, g.ready, g.err = fds[0], 0, false, nil
	g.gen++
	return nil
}

// waitReady reads the guardian's ready message.
func (g *ThawGuard) waitReady() error {
	fds := []unix.PollFd{{Fd: int32(g.sock), Events: unix.POLLIN}}
	deadline := time.Now().Add(guardReadyWait)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return errors.New("not ready in time")
		}
		n, err := unix.Poll(fds, int(left/time.Millisecond)+1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			continue
		}
		var b [8]byte
		n, err = unix.Read(g.sock, b[:])
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return err
		case n != 5 || b[0] != msgReady:
			return errors.New("exited before it was ready")
		}
		g.pid = int(binary.LittleEndian.Uint32(b[1:5]))
		return nil
	}
}

// PID returns the guardian's process id, 0 until it said it is ready.
func (g *ThawGuard) PID() int { return g.pid }

// Gen counts the guardians started: members handed to an earlier one,
// now dead, must be handed to the current one before they are stopped.
func (g *ThawGuard) Gen() int { return g.gen }

// dead reports whether the ready guardian is gone: after "ready" it never
// writes, so anything on the socket but silence is its end.
func (g *ThawGuard) dead() bool {
	fds := []unix.PollFd{{Fd: int32(g.sock), Events: unix.POLLIN | unix.POLLRDHUP}}
	for {
		n, err := unix.Poll(fds, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err != nil || n > 0
	}
}

// Ensure makes sure a live guardian stands by before a freeze: one that
// died (killed with a tree it was found in, or by the OOM killer) or was
// lost is replaced, and Gen moves on. An error means there is none: the
// caller must not freeze.
func (g *ThawGuard) Ensure() error {
	if g.sock >= 0 && g.err == nil && (!g.ready || !g.dead()) {
		return nil
	}
	if g.sock >= 0 {
		unix.Close(g.sock)
		g.sock = -1
	}
	if err := g.start(); err != nil {
		g.err = err
		return err
	}
	return nil
}

// Hold hands the guardian member id, with its pidfd when pidfd >= 0, to
// be continued if the caller dies. The member must not be stopped unless
// Hold succeeded.
func (g *ThawGuard) Hold(pidfd int, id proc.ID) error {
	if g.err != nil {
		return g.err
	}
	if !g.ready {
		if err := g.waitReady(); err != nil {
			g.err = fmt.Errorf("thaw guardian: %w", err)
			return g.err
		}
		g.ready = true
	}
	var msg [13]byte
	msg[0] = msgHold
	binary.LittleEndian.PutUint32(msg[1:5], uint32(id.PID))
	binary.LittleEndian.PutUint64(msg[5:13], id.Start)
	var oob []byte
	if pidfd >= 0 {
		oob = unix.UnixRights(pidfd)
	}
	for {
		err := unix.Sendmsg(g.sock, msg[:], oob, nil, unix.MSG_NOSIGNAL)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			g.err = fmt.Errorf("thaw guardian lost: %w", err)
		}
		return g.err
	}
}

// Done tells the guardian that nothing is left frozen (it exits at once:
// "done", or the end of the socket, ends it).
func (g *ThawGuard) Done() {
	if g.sock < 0 {
		return
	}
	unix.Sendmsg(g.sock, []byte{msgDone}, nil, nil, unix.MSG_NOSIGNAL)
	unix.Close(g.sock)
	g.sock = -1
}

// thawMain is the go-between, or with guardArg the guardian: fd 3 is its
// end of the socket.
func thawMain(args []string) int {
	// The signals that end the stopper's group or session must not end
	// either before the guardian has done its job; its socket ends it.
	signal.Ignore(unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT, unix.SIGPIPE)
	const sock = 3
	if len(args) == 0 || args[0] != guardArg {
		cmd := reexec.Command(ThawRole, nil, guardArg, strconv.Itoa(os.Getpid()))
		cmd.ExtraFiles = []*os.File{os.NewFile(sock, "thaw-guardian")}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if cmd.Start() != nil {
			return 1
		}
		return 0 // the guardian is re-parented away from the stopper
	}
	// A stopper short of descriptors hands over members without pidfds;
	// the guardian takes what its hard limit allows.
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil && lim.Cur < lim.Max {
		lim.Cur = lim.Max
		unix.Setrlimit(unix.RLIMIT_NOFILE, &lim)
	}
	// Ready only once re-parented: until then a tree stop of the
	// stopper's supervisor would still find it through the go-between.
	if len(args) > 1 {
		for deadline := time.Now().Add(guardReadyWait); strconv.Itoa(os.Getppid()) == args[1]; {
			if time.Now().After(deadline) {
				return 1
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	var ready [5]byte
	ready[0] = msgReady
	binary.LittleEndian.PutUint32(ready[1:], uint32(os.Getpid()))
	if _, err := unix.Write(sock, ready[:]); err != nil {
		return 1
	}
	var held []int        // pidfds
	var heldIDs []proc.ID // members whose pidfd did not come
	pruneAt := 64
	buf := make([]byte, 16)
	oob := make([]byte, unix.CmsgSpace(4*8))
	for {
		n, oobn, flags, _, err := unix.Recvmsg(sock, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		var fds []int
		if oobn > 0 {
			fds = rights(oob[:oobn])
			held = append(held, fds...)
		}
		if err == nil && n > 0 {
			switch buf[0] {
			case msgHold:
				if len(fds) == 0 || flags&unix.MSG_CTRUNC != 0 {
					// Sent without a pidfd, or out of descriptors here.
					if n == 13 {
						heldIDs = append(heldIDs, proc.ID{PID: int(binary.LittleEndian.Uint32(buf[1:5])),
							Start: binary.LittleEndian.Uint64(buf[5:13])})
					}
				}
				if len(held) >= pruneAt {
					held = dropExited(held)
					pruneAt = max(64, 2*len(held))
				}
				continue
			case msgDone:
				return 0
			}
		}
		// End of file or an error: the stopper is gone without "done".
		for _, fd := range held {
			unix.PidfdSendSignal(fd, unix.SIGCONT, nil, 0)
		}
		for _, id := range heldIDs {
			if st, err := proc.ReadStat(id.PID); err == nil && st.Start == id.Start {
				unix.Kill(id.PID, unix.SIGCONT)
			}
		}
		return 0
	}
}

// dropExited closes the pidfds whose process has exited and returns the
// others: the guardian of a big tree must not run out of descriptors.
func dropExited(fds []int) []int {
	pfds := make([]unix.PollFd, len(fds))
	for i, fd := range fds {
		pfds[i] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	}
	if n, err := unix.Poll(pfds, 0); err != nil || n == 0 {
		return fds
	}
	kept := fds[:0]
	for i, fd := range fds {
		if pfds[i].Revents != 0 {
			unix.Close(fd)
			continue
		}
		kept = append(kept, fd)
	}
	return kept
}

// rights returns the descriptors passed in a control message.
func rights(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if r, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, r...)
		}
	}
	return fds
}
