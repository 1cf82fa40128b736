// Package marker holds the marks of the re-exec protocol (lib/internal/reexec):
// how a fresh process of a tool's own executable knows it is to play a
// helper role. It imports nothing, so that the runner's payload gate
// (lib/internal/gate), whose init must run before os and every other
// package but syscall, shares the protocol instead of keeping its own.
//
// A process is in role NAME only when both its environment
// (TETHER_REEXEC=NAME) and its first argument (--tether-reexec=NAME) say
// so, so that a variable leaked into a user's environment never turns a
// tool into a helper.
package marker

const (
	// Env is the variable that carries the role's name.
	Env = "TETHER_REEXEC"
	// FlagPrefix starts the first argument; the role's name follows.
	FlagPrefix = "--tether-reexec="
)

// Flag is the first argument of a process in role name.
func Flag(name string) string { return FlagPrefix + name }
