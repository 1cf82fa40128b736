package runner

// The recording gate. A runner that records its payload (ledger run,
// adopt, spawn's worker) must let the payload's first instruction run only
// once the payload's PID@START is durable, and never if the runner dies
// first (SPEC §1, "Recorded before it runs"). os/exec cannot pause a child
// between fork and exec, so the runner starts a gate instead: a fresh
// process of its own executable (reexec role "gate") that blocks reading a
// pipe. Its PID and start time are the payload's, since exec keeps both.
// The runner records them, then writes the release: a length and the
// variables to add to the payload's environment (the execution id, known
// only once the claim is made), in one write that a pipe keeps whole. The
// gate execs the payload. Should the runner die first, the gate reads
// end-of-file or a short message (or is killed by its parent-death
// signal) and exits without running anything.
//
// Exec failures after the release come back over a second, close-on-exec
// pipe: end-of-file means the exec succeeded; otherwise the gate writes a
// kind byte and the errno, and exits.
//
// With PIDNamespace the gate is also where a fresh /proc is mounted, in the
// new mount namespace, before the exec: a payload must never judge
// processes through the host's /proc (SPEC §1).

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/internal/reexec"
	"golang.org/x/sys/unix"
)

const gateRole = "gate"

// The gate's inherited descriptors: the release pipe and the error pipe.
const (
	gateReleaseFD = 3
	gateErrorFD   = 4
)

// Failure kinds on the error pipe.
const (
	gateExecFailed  = 'x'
	gateMountFailed = 'm'
)

// gateStatus is the gate's exit status when it runs nothing: its runner
// died before releasing it, or it could not prepare the payload.
const gateStatus = cli.ExitNotRun

func init() { reexec.Enter(gateRole, gateMain) }

// gateMain is the gate process: args are the mode ("proc" to mount a fresh
// /proc first, "-" not to), the payload's resolved path, then its argv.
func gateMain(args []string) int {
	if len(args) < 3 {
		return gateStatus
	}
	mode, path, argv := args[0], args[1], args[2:]
	unix.CloseOnExec(gateErrorFD)
	release := os.NewFile(gateReleaseFD, "release")
	var head [4]byte
	if _, err := io.ReadFull(release, head[:]); err != nil {
		// The runner is gone: it never recorded us. Run nothing.
		return gateStatus
	}
	n := binary.LittleEndian.Uint32(head[:])
	if n > maxRelease {
		return gateStatus
	}
	msg := make([]byte, n)
	if _, err := io.ReadFull(release, msg); err != nil {
		return gateStatus
	}
	release.Close()
	env := os.Environ()
	if len(msg) > 0 {
		for kv := range strings.SplitSeq(string(msg), "\x00") {
			env = setEnv(env, kv)
		}
	}
	if mode == "proc" {
		if err := mountProc(); err != nil {
			gateFail(gateMountFailed, err)
			return gateStatus
		}
	}
	err := unix.Exec(path, argv, env)
	gateFail(gateExecFailed, err)
	return StartStatus(err)
}

// maxRelease bounds the release message: one write of at most PIPE_BUF
// bytes is never split.
const maxRelease = 4096 - 4

// setEnv sets kv (KEY=VALUE) in env, replacing the key's earlier values.
func setEnv(env []string, kv string) []string {
	key, _, _ := strings.Cut(kv, "=")
	env = slices.DeleteFunc(env, func(e string) bool { return strings.HasPrefix(e, key+"=") })
	return append(env, kv)
}

// gateFail tells the runner why the gate runs nothing.
func gateFail(kind byte, err error) {
	var msg [5]byte
	msg[0] = kind
	var errno unix.Errno
	if !errors.As(err, &errno) {
		errno = unix.EIO
	}
	binary.LittleEndian.PutUint32(msg[1:], uint32(errno))
	unix.Write(gateErrorFD, msg[:])
}

// gate is the runner's side of one gated start.
type gate struct {
	release *os.File // write end: one byte lets the payload run
	errors  *os.File // read end: end-of-file once the payload exec'd
	name    string   // the command as given, for messages
}

// gateCommand returns the command that starts the gate for o, and the
// runner's ends of its pipes. path is the payload's resolved path.
func gateCommand(o Options, path string) (*gate, *os.File, *os.File, []string, error) {
	relR, relW, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, nil, cli.Errorf(cli.ExitNotRun, "cannot start %s: %w", o.Argv[0], err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		relR.Close()
		relW.Close()
		return nil, nil, nil, nil, cli.Errorf(cli.ExitNotRun, "cannot start %s: %w", o.Argv[0], err)
	}
	mode := "-"
	if o.PIDNamespace {
		mode = "proc"
	}
	args := append([]string{mode, path}, o.Argv...)
	return &gate{release: relW, errors: errR, name: o.Argv[0]}, relR, errW, args, nil
}

// open lets the payload run, with env added to its environment, and
// reports whether it did: nil once it has exec'd, else the start error
// (the gate has then exited).
func (g *gate) open(env []string) error {
	defer g.errors.Close()
	add := strings.Join(env, "\x00")
	if len(add) > maxRelease {
		g.release.Close()
		return cli.Errorf(cli.ExitNotRun, "cannot start %s: %d bytes of environment to add, more than %d", g.name, len(add), maxRelease)
	}
	buf := binary.LittleEndian.AppendUint32(nil, uint32(len(add)))
	_, err := g.release.Write(append(buf, add...))
	g.release.Close()
	if err != nil {
		return cli.Errorf(cli.ExitNotRun, "cannot start %s: the gate is gone: %w", g.name, err)
	}
	var msg [5]byte
	n, _ := io.ReadFull(g.errors, msg[:])
	if n == 0 {
		return nil
	}
	if n < len(msg) {
		return cli.Errorf(cli.ExitNotRun, "cannot start %s: the gate failed", g.name)
	}
	errno := syscall.Errno(binary.LittleEndian.Uint32(msg[1:]))
	if msg[0] == gateMountFailed {
		return cli.Errorf(cli.ExitNotRun, "cannot mount /proc for %s in its PID namespace: %w", g.name, errno)
	}
	return StartError(g.name, &os.PathError{Op: "exec", Path: g.name, Err: errno})
}

// shut keeps the payload from ever running: the gate reads end-of-file.
func (g *gate) shut() {
	g.release.Close()
	g.errors.Close()
}
