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
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
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

// IsPostgres reports whether loc names a PostgreSQL store: a postgres://
// or postgresql:// URL.
func IsPostgres(loc string) bool {
	return strings.HasPrefix(loc, "postgres://") || strings.HasPrefix(loc, "postgresql://")
}

// Redact is loc as messages, --json and process titles show it: a URL
// without its password.
func Redact(loc string) string {
	if IsURL(loc) {
		return redactURL(loc)
	}
	return loc
}

// redactURL returns the URL loc with any password replaced by "xxxxx".
func redactURL(loc string) string {
	u, err := url.Parse(loc)
	if err != nil {
		// Cannot tell where a password would be: show the scheme only.
		if i := strings.Index(loc, "://"); i >= 0 {
			return loc[:i+3] + "…"
		}
		return "…"
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// openPostgres opens a PostgreSQL store. It is set by lib/ledger/pgstore's
// init, and so only in a binary that links the PostgreSQL driver: the
// tether-pg binary and the lib command map. ledger and adopt do not link it
// (it would cost every start its TLS, x509 and net initialisation): given a
// PostgreSQL location, they hand the whole command to tether-pg (handOff).
var openPostgres func(loc string, o Options) (ledger.Ledger, error)

// RegisterPostgres is called by lib/ledger/pgstore's init.
func RegisterPostgres(open func(loc string, o Options) (ledger.Ledger, error)) { openPostgres = open }

// Open opens the store at loc. In a binary without the PostgreSQL driver a
// PostgreSQL location does not return: the process becomes tether-pg
// running the same command (handOff), or Open returns why it cannot.
func Open(loc string, o Options) (ledger.Ledger, error) {
	switch {
	case IsPostgres(loc) && openPostgres == nil:
		return nil, handOff()
	case IsPostgres(loc):
		return openPostgres(loc, o)
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

// PostgresBinary is the program that serves PostgreSQL stores, installed
// next to ledger and adopt.
const PostgresBinary = "tether-pg"

// handOff execs tether-pg, found next to this executable, with this
// process's own tool name and arguments: "tether-pg ledger ARGS..." or
// "tether-pg adopt ARGS...". Nothing has been written or locked yet when a
// store is opened, and the PID stays, so a caller that recorded this
// process (spawn's ack, an owner) still names it. It returns only if the
// exec failed.
func handOff() error {
	exe, err := os.Executable()
	if err != nil {
		return unavailable(fmt.Sprintf("PostgreSQL stores are served by %s, but this program's own path is unknown: %v", PostgresBinary, err))
	}
	pg := filepath.Join(filepath.Dir(exe), PostgresBinary)
	tool := filepath.Base(os.Args[0])
	err = syscall.Exec(pg, append([]string{pg, tool}, os.Args[1:]...), os.Environ())
	return unavailable(fmt.Sprintf("PostgreSQL stores are served by %s, which cannot be run: %v", pg, err))
}

// unavailable is a system error (ledger.ErrUnavailable, exit 3) that
// reads as its message alone.
type unavailable string

func (e unavailable) Error() string { return string(e) }
func (e unavailable) Unwrap() error { return ledger.ErrUnavailable }
