// Package reexec runs a small helper role of a tether tool in a fresh
// process of the same executable, such as the thaw guardian of
// stopbounded --tree or a runner's payload gate. A helper that must
// outlive a SIGKILL of its tool, or run code between fork and exec,
// cannot be a goroutine. This is the one way a tool re-executes itself:
// the gate, which must run before any other package's init, keeps its
// own early entry (lib/internal/gate) but is started by Command and
// recognised by the same marks (lib/internal/reexec/marker).
//
// A role package enters from an init function, so the role runs before any
// main — a tool's, or a test binary's under testscript — looks at its
// arguments:
//
//	func init() { reexec.Enter(ThawRole, thawMain) }
//
//	cmd := reexec.Command(ThawRole, env, args...) // exec.Cmd of /proc/self/exe
//
// A process is in a role only when both its environment (TETHER_REEXEC=NAME)
// and its first argument (--tether-reexec=NAME) say so, so that a variable
// leaked into a user's environment never turns a tool into a helper. Enter
// removes the variable before the role runs. Descriptors a role needs
// beyond the standard three are the command's ExtraFiles, set by the
// caller: 3, 4 and so on, in order.
package reexec

import (
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/tether-sh/tether/lib/internal/reexec/marker"
)

// Enter runs main with the role's arguments and exits with its status if
// this process was started by Command(name, ...); otherwise it returns at
// once. Call it from an init function.
func Enter(name string, main func(args []string) int) {
	if os.Getenv(marker.Env) != name || len(os.Args) < 2 || os.Args[1] != marker.Flag(name) {
		return
	}
	os.Unsetenv(marker.Env)
	os.Exit(main(os.Args[2:]))
}

// Command returns a command that runs role name with args in a new process
// of this executable. env is the role's environment (nil: this process's);
// the role marker is added to it. The caller sets the rest (files,
// SysProcAttr) and starts it.
func Command(name string, env []string, args ...string) *exec.Cmd {
	if env == nil {
		env = os.Environ()
	}
	env = slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, marker.Env+"=") })
	argv := append([]string{os.Args[0], marker.Flag(name)}, args...)
	return &exec.Cmd{Path: selfExe, Args: argv, Env: append(env, marker.Env+"="+name)}
}
