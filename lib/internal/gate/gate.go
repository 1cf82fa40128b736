// Package gate is the payload's side of a runner's recording gate (see
// lib/runner/gate_linux.go): a fresh process of the tool's own executable that
// waits on a pipe until its runner has recorded its PID@START, then execs
// the payload — or exits, running nothing, if the runner died first.
//
// The gate is entered from this package's init. The package imports
// nothing but syscall (and sigstate, itself syscall, sync and unsafe, and
// the re-exec protocol's marks, which import nothing), so
// that its init runs as soon as syscall's has —
// before os, reflect, kong and every other package that sorts after
// "github.com/tether-sh": Go initialises the first ready package in
// import-path order. A gate is one more process start before every
// recorded payload; it should cost no more than the Go runtime's own.
//
// The gate is a role of the one re-exec protocol (lib/internal/reexec,
// which builds its command): a process is a gate only when its
// environment has TETHER_REEXEC=gate and its first argument is
// --tether-reexec=gate. The rest of its arguments are the mode
// ("proc": mount a fresh /proc first, in the gate's new mount namespace;
// "-": not; either followed by ':' and the numbers of the synchronous
// faults to ignore before the exec, "-:7,11"), the payload's resolved path
// and its argv. Its descriptors 3
// and 4 are the release pipe (the byte Release lets the payload run, as
// Stamped does with one variable of its environment set; end-of-file,
// the runner's death, runs nothing) and the error pipe (close-on-exec: end-of-file once the payload exec'd,
// else a kind byte and a little-endian errno).
package gate

// The gate's protocol, shared with the runner.
const (
	// Role is the gate's re-exec role (reexec.Command(gate.Role, ...)).
	Role      = "gate"
	ReleaseFD = 3
	ErrorFD   = 4
	// Status is the gate's exit status when it runs nothing.
	Status = 125
	// Failure kinds on the error pipe.
	ExecFailed  = 'x'
	MountFailed = 'm'
	// Release is the release pipe's one byte.
	Release = 'r'
	// Stamped releases as Release does, and is followed by a length
	// byte and that many bytes, NAME=VALUE: the value to give NAME in
	// the payload's environment in place of the one the gate has
	// (runner.Options.Stamp).
	Stamped = 's'
)
