// Package spec holds the conventions every tether tool shares (CONTRACT.md
// §1 and §2): the exit codes and the error that carries one, the shell's
// mapping of a wait status to an exit code (128+N for signal N exists only
// here), the parsers for signal names and durations that every flag uses,
// and the escaping of the free text a diagnostic quotes (EscapeControl,
// EscapeControlChars).
//
// It is a leaf: it imports only the standard library and x/sys, so the
// process engines (proc, stop, runner, execution) share it without
// depending on the command-line wiring in lib/cli.
//
//	if err != nil {
//		return spec.Errorf(spec.ExitNotRun, "cannot start %s: %w", name, err)
//	}
//	code := spec.Code(err, spec.ExitSystem) // the code an error carries, or the fallback
//	sig, err := spec.ParseSignal("term")    // unix.SIGTERM
package spec
