// Package location opens the ledger store a location names, the one place
// that decides which store that is: a postgres:// or postgresql:// URL, or
// libpq's keyword/value form ("host=/run/postgresql dbname=jobs",
// "service=jobs"), is a PostgreSQL database (lib/ledger/pgstore); any
// other scheme ("postgres:/jobs", "mysql://db") is refused, and so is a
// relative folder for a command that writes; anything else is a directory
// of the flock'd file store (lib/ledger/filestore). ledger, adopt and spawn's worker
// all open their store here. Open is pure: a binary without the
// PostgreSQL driver gets ErrNoPostgres, and its command (lib/cmd) hands
// itself to tether-pg.
//
// # Synopsis
//
//	loc, err := location.Resolve(flag)          // --ledger, else $TETHER_LEDGER, else the default folder
//	st, err := location.Open(loc, location.Options{Lease: 30 * time.Second})
//	defer st.Close()
//	if err := location.CheckLease(lease, grace); err != nil { ... }   // a usage error
//	go st.KeepLease(ctx, id, ledger.Keep{Since: sent, Stop: ledger.StopBudget(grace), Lost: stop}) // every store: a no-op without a lease
//
// A URL may carry a password: Redact gives the form to show, and a worker
// is handed its location through the environment (HandoffEnvVar), never
// on its command line.
package location

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/filestore"
)

// EnvVar names the store in the environment (after --ledger).
const EnvVar = ledger.EnvVar

// HandoffEnvVar names the store spawn hands its worker when it is not a
// folder, so that a URL's password never shows on a command line, nor in
// the payload's environment (ledger.HandoffEnvVar).
const HandoffEnvVar = ledger.HandoffEnvVar

// Options say how to open a store: every tool's policy, which the store
// it names applies or has no work for.
type Options struct {
	// LockTimeout bounds the wait for the file store's lock, as the
	// --lock-timeout flag does: the default bound unless LockTimeoutGiven,
	// no bound for a given 0.
	LockTimeout      time.Duration
	LockTimeoutGiven bool
	// Warn receives the line said after a second of waiting for the
	// file store's lock (nil: nothing is said).
	Warn func(msg string)
	// Lease is the lease of owners recorded through a PostgreSQL store
	// (0: none); the file store judges its owners by PID and keeps none.
	Lease time.Duration
	// Existing is for commands that only read: a store that does not
	// exist is ledger.ErrNoStore, never created; a file store another
	// user owns is opened read-only (filestore.OpenExisting).
	Existing bool
	// AsOwner, with Existing: root reads a file store another user owns
	// with that user's rights (filestore.ReadAsOwner) until the store is
	// closed. Only for a command that then only prints, to a stdout
	// already open.
	AsOwner bool
	// Clock, if set, is the file store's clock (filestore.Clock): the
	// test binary's, never a released tool's. A PostgreSQL store keeps
	// the server's.
	Clock func() time.Time
}

// fileOptions are the file store's options o names.
func (o Options) fileOptions() []filestore.Option {
	opts := []filestore.Option{filestore.LockTimeoutFlag(o.LockTimeoutGiven, o.LockTimeout)}
	if o.Warn != nil {
		opts = append(opts, filestore.LockWarn(o.Warn))
	}
	if o.Clock != nil {
		opts = append(opts, filestore.Clock(o.Clock))
	}
	return opts
}

// ServedBy is the program that serves the store at loc when this one
// cannot ("tether-pg" for a PostgreSQL location in a binary without the
// driver), else "": the router of ledger and adopt asks it before
// anything is parsed further, caught or opened.
func ServedBy(loc string) string {
	if IsPostgres(loc) && openPostgres == nil {
		return PostgresBinary
	}
	return ""
}

// CheckLeaseAt is CheckLease for the store at loc: nil for a store that
// keeps no leases (the file store judges its owners by PID).
func CheckLeaseAt(loc string, lease, grace time.Duration) error {
	if !IsPostgres(loc) {
		return nil
	}
	return CheckLease(lease, grace)
}

// Handoff is what spawn hands its worker (adopt) so that it opens the
// store at loc with lease: the worker's environment and flags. A folder
// is named on the worker's command line already; any other location
// goes through the environment (HandoffEnvVar), so that a URL's password
// never shows in ps nor reaches the payload, with the lease it keeps.
func Handoff(loc string, lease time.Duration) (env, flags []string) {
	if !IsPostgres(loc) {
		return nil, nil
	}
	return []string{HandoffEnvVar + "=" + loc}, []string{"--lease", lease.String()}
}

// Names lists the jobs and execution ids of the store at loc (only those
// that may still be live when activeOnly), for a shell's completion:
// read-only, never waiting for a lock nor creating anything; none for a
// store that cannot be listed so cheaply (a database).
func Names(loc string, activeOnly bool) (jobs, ids []string) {
	if loc == "" || IsPostgres(loc) || IsURL(loc) {
		return nil, nil
	}
	return filestore.Names(loc, activeOnly)
}

// CheckLease refuses (bad input: a usage error) a lease too short for
// the grace: less than twice ledger.StopBudget(grace), so that a lease
// has two renewals or more before it is given up (the lease math:
// lib/ledger's lease.go, computed by pgstore's Store.KeepLease).
func CheckLease(lease, grace time.Duration) error {
	if lease <= 0 {
		return nil
	}
	if need := 2 * ledger.StopBudget(grace); lease < need {
		return badName(fmt.Sprintf("--lease %v is too short for --grace %v: a runner that cannot renew its lease stops CMD (TERM, %v, KILL) before the lease runs out, and keeps at least half the lease for renewing it: give --lease %v or more, or a shorter --grace", lease, grace, grace, need))
	}
	return nil
}

// IsURL reports whether loc is a URL (has a scheme).
func IsURL(loc string) bool { return strings.Contains(loc, "://") }

// Resolve returns the location flag names, else Default().
func Resolve(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	return Default()
}

// ResolveHandedOff is Resolve for a worker (adopt): the location flag
// names, else the one its spawn handed it ($TETHER_HANDOFF_LEDGER), else
// Default().
func ResolveHandedOff(flag string) (string, error) {
	if flag == "" {
		flag = os.Getenv(HandoffEnvVar)
	}
	return Resolve(flag)
}

// Default returns the location used when no --ledger is given:
// $TETHER_LEDGER (EnvVar) if set and not empty, else the folder
// ${XDG_STATE_HOME:-$HOME/.local/state}/tether/ledger.
func Default() (string, error) {
	if d := os.Getenv(EnvVar); d != "" {
		return d, nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "tether", "ledger"), nil
	}
	home := os.Getenv("HOME")
	if home == "" {
		return "", badName("no store: --ledger, $TETHER_LEDGER, $XDG_STATE_HOME and $HOME are all unset")
	}
	return filepath.Join(home, ".local", "state", "tether", "ledger"), nil
}

// IsPostgres reports whether loc names a PostgreSQL store: a postgres://
// or postgresql:// URL, or libpq's keyword/value form
// ("host=/run/postgresql dbname=jobs", "service=jobs"), which the driver
// parses as libpq does.
func IsPostgres(loc string) bool {
	return strings.HasPrefix(loc, "postgres://") || strings.HasPrefix(loc, "postgresql://") || isKeywordValue(loc)
}

// isKeywordValue reports whether loc starts as libpq's keyword/value
// connection string does: optional spaces (libpq's, \v too), a keyword of
// [A-Za-z_], optional spaces, "=" (`^[\s\v]*[A-Za-z_]+[\s\v]*=`, by hand:
// every open asks).
func isKeywordValue(loc string) bool {
	rest := strings.TrimLeft(loc, libpqSpaces)
	word := strings.TrimLeftFunc(rest, func(r rune) bool { return r == '_' || isLetter(r) })
	return len(word) < len(rest) && strings.HasPrefix(strings.TrimLeft(word, libpqSpaces), "=")
}

// spaces are regexp's \s.
const spaces = "\t\n\f\r "

func isLetter(r rune) bool { return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' }

// scheme returns the start of a URL or URL-like name ("postgres:",
// "file:"), `^[A-Za-z][A-Za-z0-9+.-]*:`, or "" when loc has none.
func scheme(loc string) string {
	if loc == "" || !isLetter(rune(loc[0])) {
		return ""
	}
	for i := 1; i < len(loc); i++ {
		switch c := loc[i]; {
		case c == ':':
			return loc[:i+1]
		case isLetter(rune(c)), '0' <= c && c <= '9', c == '+', c == '.', c == '-':
		default:
			return ""
		}
	}
	return ""
}

// Check refuses a location that would name a store by accident: a
// scheme other than postgres:// and postgresql:// ("postgres:/jobs",
// "postgres:jobs", "mysql://db"), which a file store would otherwise take
// as a folder under the current directory, and — for a command that
// writes (write) — a relative folder, which names another store in every
// working directory (two cron jobs, two hosts, never the same one). The
// error is bad input (2) and names the fix. Open checks it too.
func Check(loc string, write bool) error {
	switch {
	case loc == "":
		return badName("empty store location")
	case IsPostgres(loc):
		return nil
	case IsURL(loc):
		return badURL{Redact(loc)}
	case scheme(loc) != "":
		name := scheme(loc)
		fix := "write postgres:///DB?host=/run/postgresql (three slashes when no host is named) or postgres://HOST/DB"
		if lower := strings.ToLower(name); lower != "postgres:" && lower != "postgresql:" {
			fix = "name a folder by its absolute path, or a database by a postgres:// URL"
		}
		return badName(fmt.Sprintf("%s: not a store: a name starting %q is neither a postgres:// URL nor a folder; %s", Redact(loc), name, fix))
	case write && strings.HasPrefix(loc, "~"):
		// A ~ no shell expanded (quoted, after --ledger=, a crontab's
		// variable) means the home folder, never a folder named ~.
		fix := "by its absolute path"
		if loc == "~" || strings.HasPrefix(loc, "~/") {
			fix = fmt.Sprintf("as \"$HOME%s\"", loc[1:])
		}
		return badName(fmt.Sprintf("%s: the shell did not expand ~ (it is quoted, or follows =): name the store folder %s", loc, fix))
	case write && !filepath.IsAbs(loc):
		return badName(fmt.Sprintf("%s: a relative store folder is another store in every working directory; name it by its absolute path (--ledger \"$PWD/%s\")", loc, loc))
	}
	return nil
}

// badName is bad input (2) that reads as its message alone.
type badName string

func (e badName) Error() string { return string(e) }
func (e badName) Unwrap() error { return ledger.ErrBadInput }

// openPostgres opens a PostgreSQL store. It is set by lib/ledger/pgstore's
// init, and so only in a binary that links the PostgreSQL driver: the
// tether-pg binary and the lib command map. ledger and adopt do not link it
// (it would cost every start its TLS, x509 and net initialisation): given a
// PostgreSQL location, they hand the whole command to tether-pg before
// opening anything (lib/cmd/internal/store.Route, which asks ServedBy).
var openPostgres func(loc string, o Options) (ledger.Ledger, error)

// RegisterPostgres is called by lib/ledger/pgstore's init.
func RegisterPostgres(open func(loc string, o Options) (ledger.Ledger, error)) { openPostgres = open }

// ErrNoPostgres is Open's error for a PostgreSQL location in a binary
// without the driver: the caller should have handed the command to
// tether-pg. It is ledger.ErrUnavailable.
var ErrNoPostgres error = noPostgres{}

// noPostgres is ErrNoPostgres: a type, not fmt.Errorf, which would run
// fmt at every start-up.
type noPostgres struct{}

func (noPostgres) Error() string {
	return ledger.ErrUnavailable.Error() + ": this program does not serve PostgreSQL stores: " + PostgresBinary + " does"
}

func (noPostgres) Unwrap() error { return ledger.ErrUnavailable }

// Open opens the store at loc, after Check (a writer unless o.Existing).
// It never execs nor exits: in a binary without the PostgreSQL driver a
// PostgreSQL location is ErrNoPostgres.
func Open(loc string, o Options) (ledger.Ledger, error) {
	if err := Check(loc, !o.Existing); err != nil {
		return nil, err
	}
	switch {
	case IsPostgres(loc) && openPostgres == nil:
		return nil, ErrNoPostgres
	case IsPostgres(loc):
		return openPostgres(loc, o)
	case o.Existing && o.AsOwner:
		restore, err := filestore.ReadAsOwner(loc)
		if err != nil {
			return nil, err
		}
		st, err := filestore.OpenExisting(loc, o.fileOptions()...)
		if err != nil {
			if rerr := restore(); rerr != nil {
				return nil, rerr
			}
			return nil, err
		}
		return asOwner{st, restore}, nil
	case o.Existing:
		return filestore.OpenExisting(loc, o.fileOptions()...)
	}
	return filestore.Open(loc, o.fileOptions()...)
}

// asOwner is a store read as its owner (Options.AsOwner): closing it
// makes the process root again.
type asOwner struct {
	ledger.Ledger
	restore func() error
}

func (s asOwner) Close() error {
	err := s.Ledger.Close()
	if rerr := s.restore(); rerr != nil {
		return rerr
	}
	return err
}

// Unwrap is the store read.
func (s asOwner) Unwrap() ledger.Ledger { return s.Ledger }

// Exists reports whether the store at loc exists, for a command (adopt)
// that must never create one: a folder must exist; a database is asked
// when opened.
func Exists(loc string) error {
	if IsURL(loc) || IsPostgres(loc) {
		return nil
	}
	_, err := os.Stat(loc)
	return err
}

// badURL is a URL that names no store: bad input (2).
type badURL struct{ loc string }

func (e badURL) Error() string {
	return e.loc + ": not a store: only postgres:// and postgresql:// URLs (and libpq's key=value form) name one"
}

func (e badURL) Unwrap() error { return ledger.ErrBadInput }

// PostgresBinary is the program that serves PostgreSQL stores, installed
// next to ledger and adopt.
const PostgresBinary = "tether-pg"
