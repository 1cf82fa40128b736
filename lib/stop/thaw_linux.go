package stop

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/internal/reexec"
)

// ThawRole is the reexec role of the thaw guardian.
const ThawRole = "thaw"

func init() { reexec.Enter(ThawRole, thawMain) }

// Messages on the guardian's socket: one byte each, "hold" carrying one
// pidfd as SCM_RIGHTS.
const (
	msgReady = 'R' // guardian → caller: it holds the socket and ignores signals
	msgHold  = 'H' // caller → guardian: continue this member if I die
	msgDone  = 'D' // caller → guardian: nothing is left frozen; exit
)

// guardReadyWait bounds the guardian's start.
const guardReadyWait = 10 * time.Second

// ThawGuard is a helper process that keeps a frozen tree from staying
// frozen when its stopper dies, even of SIGKILL, where no handler runs.
// The stopper hands it each member's pidfd before it first stops the
// member; when the stopper's end of their socket closes without "done" —
// the stopper died — the guardian sends SIGCONT through every pidfd it
// holds, then exits. A pidfd never names another process, so a member
// that is gone meanwhile (its PID recycled) is never hit.
//
// The guardian is the stopper's child, in its own process group and
// ignoring TERM, INT, HUP and QUIT, so that the signal (or the terminal's
// Ctrl-C) that kills the stopper's group does not kill it too. It is never
// a member of a tree: a tree never contains its stopper, whose children
// the walk never visits, and the walk skips the guardian's PID besides.
type ThawGuard struct {
	sock  int
	cmd   *exec.Cmd
	ready bool  // the guardian said it is ready
	err   error // the first failed hand-over: the guardian is lost
}

// StartThawGuard starts a guardian. It does not wait for it: the first
// Hold does, so that the guardian's start overlaps the caller's own work.
func StartThawGuard() (*ThawGuard, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("thaw guardian: socketpair: %w", err)
	}
	peer := os.NewFile(uintptr(fds[1]), "thaw-guardian")
	cmd := reexec.Command(ThawRole, nil)
	cmd.ExtraFiles = []*os.File{peer} // fd 3
	// Its own group: a signal to the stopper's group must not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	peer.Close()
	if err != nil {
		unix.Close(fds[0])
		return nil, fmt.Errorf("thaw guardian: %w", err)
	}
	return &ThawGuard{sock: fds[0], cmd: cmd}, nil
}

// waitReady reads the guardian's ready byte.
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
		var b [1]byte
		n, err = unix.Read(g.sock, b[:])
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return err
		case n != 1 || b[0] != msgReady:
			return errors.New("exited before it was ready")
		}
		return nil
	}
}

// PID returns the guardian's process id.
func (g *ThawGuard) PID() int { return g.cmd.Process.Pid }

// Hold hands the guardian a member's pidfd, to be continued if the caller
// dies. The member must not be stopped unless Hold succeeded.
func (g *ThawGuard) Hold(pidfd int) error {
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
	for {
		err := unix.Sendmsg(g.sock, []byte{msgHold}, unix.UnixRights(pidfd), nil, unix.MSG_NOSIGNAL)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			g.err = fmt.Errorf("thaw guardian lost: %w", err)
		}
		return g.err
	}
}

// Done tells the guardian that nothing is left frozen, and waits for it to
// exit (at once: "done", or the end of the socket, ends it).
func (g *ThawGuard) Done() {
	if g.sock < 0 {
		return
	}
	unix.Sendmsg(g.sock, []byte{msgDone}, nil, nil, unix.MSG_NOSIGNAL)
	unix.Close(g.sock)
	g.sock = -1
	g.cmd.Wait()
}

// thawMain is the guardian: fd 3 is its end of the socket.
func thawMain(args []string) int {
	// The signals that end the stopper's group or session must not end
	// the guardian before it has done its job; its socket ends it.
	signal.Ignore(unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT, unix.SIGPIPE)
	const sock = 3
	if _, err := unix.Write(sock, []byte{msgReady}); err != nil {
		return 1
	}
	var held []int
	buf := make([]byte, 16)
	oob := make([]byte, unix.CmsgSpace(4*8))
	for {
		n, oobn, _, _, err := unix.Recvmsg(sock, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if oobn > 0 {
			held = append(held, rights(oob[:oobn])...)
		}
		if err == nil && n > 0 {
			switch buf[0] {
			case msgHold:
				continue
			case msgDone:
				return 0
			}
		}
		// End of file or an error: the stopper is gone without "done".
		for _, fd := range held {
			unix.PidfdSendSignal(fd, unix.SIGCONT, nil, 0)
		}
		return 0
	}
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
