// Package exit holds the exit codes every tether tool shares (CONTRACT.md
// §2), the error that carries one, and the shell's mapping of a wait
// status to an exit code (128+N for signal N exists only here).
//
// It is a leaf: it imports only the standard library, so the process
// engines (proc, stop, runner, execution) share it without depending on
// the command-line wiring in lib/cli.
//
//	if err != nil {
//		return exit.Errorf(exit.NotRun, "cannot start %s: %w", name, err)
//	}
//	code := exit.Code(err, exit.System) // the code an error carries, or the fallback
package exit
