package runner

// The recording gate. A runner that records its payload (ledger run,
// adopt, spawn's worker) must let the payload's first instruction run only
// once the payload's PID@START is durable, and never if the runner dies
// first (SPEC §1, "Recorded before it runs"). os/exec cannot pause a child
// between fork and exec, so the runner starts a gate instead: a fresh
// process of its own executable that blocks reading a pipe
// (lib/internal/gate). Its PID and start time are the payload's,
// since exec keeps both.
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
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"

	"github.com/tether-sh/tether/lib/spec"

	"github.com/tether-sh/tether/lib/internal/gate"
)

// gated is the runner's side of one gated start.
type gated struct {
	release *os.File // write end: the release lets the payload run
	errors  *os.File // read end: end-of-file once the payload exec'd
	name    string   // the command as given, for messages
}

// gateCommand returns the gate's command for o, not yet started, and the
// runner's side of it. path is the payload's resolved path; env its
// environment (nil: the runner's).
func gateCommand(o Options, path string) (*exec.Cmd, *gated, error) {
	relR, relW, err := os.Pipe()
	if err != nil {
		return nil, nil, spec.Errorf(spec.ExitNotRun, "cannot start %s: %w", o.Argv[0], err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		relR.Close()
		relW.Close()
		return nil, nil, spec.Errorf(spec.ExitNotRun, "cannot start %s: %w", o.Argv[0], err)
	}
	mode := "-"
	if o.PIDNamespace {
		mode = "proc"
	}
	env := o.Env
	if env == nil {
		env = os.Environ()
	}
	env = slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, gate.Env+"=") })
	cmd := &exec.Cmd{
		// This process's own executable, even if it was replaced on disk.
		Path:       "/proc/self/exe",
		Args:       append([]string{os.Args[0], gate.Arg, mode, path}, o.Argv...),
		Env:        append(env, gate.Env+"=1"),
		ExtraFiles: []*os.File{relR, errW}, // descriptors 3 and 4
	}
	return cmd, &gated{release: relW, errors: errR, name: o.Argv[0]}, nil
}

// open lets the payload run, with env added to its environment, and
// reports whether it did: nil once it has exec'd, else the start error
// (the gate has then exited).
func (g *gated) open(env []string) error {
	defer g.errors.Close()
	add := strings.Join(env, "\x00")
	if len(add) > gate.MaxRelease {
		g.release.Close()
		return spec.Errorf(spec.ExitNotRun, "cannot start %s: %d bytes of environment to add, more than %d", g.name, len(add), gate.MaxRelease)
	}
	buf := binary.LittleEndian.AppendUint32(nil, uint32(len(add)))
	_, err := g.release.Write(append(buf, add...))
	g.release.Close()
	if err != nil {
		return spec.Errorf(spec.ExitNotRun, "cannot start %s: the gate is gone: %w", g.name, err)
	}
	var msg [5]byte
	n, _ := io.ReadFull(g.errors, msg[:])
	if n == 0 {
		return nil
	}
	if n < len(msg) {
		return spec.Errorf(spec.ExitNotRun, "cannot start %s: the gate failed", g.name)
	}
	errno := syscall.Errno(binary.LittleEndian.Uint32(msg[1:]))
	if msg[0] == gate.MountFailed {
		return spec.Errorf(spec.ExitNotRun, "cannot mount /proc for %s in its PID namespace: %w", g.name, errno)
	}
	return StartError(g.name, &os.PathError{Op: "exec", Path: g.name, Err: errno})
}

// shut keeps the payload from ever running: the gate reads end-of-file.
func (g *gated) shut() {
	g.release.Close()
	g.errors.Close()
}
