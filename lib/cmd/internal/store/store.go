// Package store is where every tool of lib/cmd meets its store, the one
// place of their store policy: Route picks the program that serves a
// location before anything is caught, locked or opened; Open opens the
// store with the tool's options (location does the rest: which store a
// location names, reading as the owner, read-only opens); ExitCode and
// NotRun map a store's errors to the exit codes of CONTRACT.md §2. No
// package under lib/cmd names a store implementation (filestore, pgstore):
// TestNoStoreImports holds that, tether-pg's blank import of pgstore,
// which registers the driver, aside.
//
//	loc, err := location.Resolve(flag)
//	if err := store.Route("ledger", loc, args); err != nil { ... } // returns only on failure, or nil: served here
//	st, err := store.Open(tool, loc, location.Options{LockTimeout: d, LockTimeoutGiven: given})
package store

import (
	"errors"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/cmd/internal/sibling"
	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/location"
)

// Route hands the whole command line args of tool (ledger or adopt) to
// the program that serves the store at loc when this one does not
// (location.ServedBy: tether-pg for a PostgreSQL store): one exec, the
// same PID. It returns nil when this program serves loc, and otherwise
// only when that program cannot be run (ledger.ErrUnavailable). Call it
// from the main goroutine before any signal is caught, any lock taken or
// anything written: a signal caught here would be lost in the exec.
func Route(tool, loc string, args []string) error {
	bin := location.ServedBy(loc)
	if bin == "" {
		return nil
	}
	return sibling.Exec(bin, tool, args, "PostgreSQL stores are served by")
}

// Open opens the store at loc for tool t with o; the lock's waiting is
// said on t's stderr unless o says where.
func Open(t *cli.Tool, loc string, o location.Options) (ledger.Ledger, error) {
	if o.Warn == nil {
		o.Warn = func(msg string) { t.Warnf("%s", msg) }
	}
	return location.Open(loc, o)
}

// ExitCode maps an error to the exit codes of CONTRACT.md §2: its own
// (*exit.Error), 2 for bad input, 1 for a refusal or nothing found,
// else 3 (a corrupt or unsafe store, one that cannot be reached).
func ExitCode(err error) int {
	var ee *exit.Error
	switch {
	case errors.As(err, &ee):
		return ee.Code
	case errors.Is(err, ledger.ErrBadID), errors.Is(err, ledger.ErrBadInput):
		return exit.Usage
	case errors.Is(err, ledger.ErrRefused), errors.Is(err, ledger.ErrNotFound):
		return exit.Refused
	}
	return exit.System
}

// NotRun is the exit code of a runner (ledger run, spawn, adopt) whose
// command did not run because of err: 2 for bad input (a store location
// that names none), else 125 — whatever the store, and a database that
// cannot be reached or a missing tether-pg too: CMD did not run.
func NotRun(err error) int {
	if ExitCode(err) == exit.Usage {
		return exit.Usage
	}
	return exit.NotRun
}
