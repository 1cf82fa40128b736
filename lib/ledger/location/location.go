// Package location opens the ledger store a location names, the one place
// that decides which store that is: a postgres:// or postgresql:// URL is
// a PostgreSQL database (lib/ledger/pgstore), any other URL is refused,
// and anything else is a directory of the flock'd file store
// (lib/ledger). ledger, adopt and spawn's worker all open their store
// here.
//
// # Synopsis
//
//	loc, err := location.Resolve(flag)          // --ledger, else $TETHER_LEDGER, else the default folder
//	st, err := location.Open(loc, location.Options{Lease: 30 * time.Second})
//	defer st.Close()
//	if l, ok := st.(location.Leaser); ok { go l.KeepLease(ctx, id, warn) }
//
// A URL may carry a password: Redact gives the form to show, and a worker
// is handed its location through the environment (EnvVar), never on its
// command line.
package location

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/pgstore"
)

// EnvVar names the store in the environment (after --ledger). spawn
// passes its store to the worker in it, so that a URL's password never
// shows on a command line.
const EnvVar = "TETHER_LEDGER"

// Options say how to open a store.
type Options struct {
	// File are the file store's options (lock timeout, warnings).
	File []ledger.Option
	// Lease is the lease of owners recorded through a PostgreSQL store
	// (0: none); the file store judges its owners by PID and keeps none.
	Lease time.Duration
	// Existing is for commands that only read: a store that does not
	// exist is ledger.ErrNoStore, never created.
	Existing bool
}

// Leaser is a store that keeps owners' leases (PostgreSQL).
type Leaser interface {
	// KeepLease renews execution id's lease until ctx is done or it ends.
	KeepLease(ctx context.Context, id string, warn func(format string, args ...any))
}

// HostRecoverer is a store that holds other hosts' executions.
type HostRecoverer interface {
	// RecoverHost ends every open execution owned on host, declared dead.
	RecoverHost(host string) ([]ledger.Record, error)
}

// LateRecorder keeps a result that came after recovery on the record.
type LateRecorder interface {
	RecordLate(id string, status ledger.Status, exitCode *int, errMsg string) (bool, error)
}

// IsURL reports whether loc is a URL (has a scheme).
func IsURL(loc string) bool { return strings.Contains(loc, "://") }

// Resolve returns the location flag names, else $TETHER_LEDGER's, else
// the default folder.
func Resolve(flag string) (string, error) {
	return ledger.ResolveDir(flag)
}

// Redact is loc as messages show it: a URL without its password.
func Redact(loc string) string {
	if IsURL(loc) {
		return pgstore.Redact(loc)
	}
	return loc
}

// Open opens the store at loc.
func Open(loc string, o Options) (ledger.Ledger, error) {
	switch {
	case pgstore.IsURL(loc):
		return pgstore.Open(loc, pgstore.Options{Lease: o.Lease, Existing: o.Existing})
	case IsURL(loc):
		return nil, badURL{Redact(loc)}
	case o.Existing:
		return ledger.OpenExisting(loc, o.File...)
	}
	return ledger.Open(loc, o.File...)
}

// Exists reports whether the store at loc exists, for a command (adopt)
// that must never create one: a folder must exist; a database is asked
// when opened.
func Exists(loc string) error {
	if IsURL(loc) {
		return nil
	}
	_, err := os.Stat(loc)
	return err
}

// badURL is a URL that names no store: bad input (2).
type badURL struct{ loc string }

func (e badURL) Error() string {
	return e.loc + ": not a store: only postgres:// and postgresql:// URLs name one"
}

func (e badURL) Unwrap() error { return ledger.ErrBadInput }
