// Package pgstore is the ledger kept in PostgreSQL: the same state machine,
// contract and messages as the flock'd file store (filestore.Store), shared
// by every host that names the same database, so that two hosts running
// the same crontab line run each slot once.
//
// # Synopsis
//
//	st, err := pgstore.Open("postgres:///jobs?host=/run/postgresql", pgstore.Options{Lease: 30 * time.Second})
//	defer st.Close()
//	rec, err := st.Claim("backup", ledger.ClaimOptions{Owner: owner, Instant: t})
//	go st.KeepLease(ctx, rec.ID, ledger.Keep{Since: sent, Stop: ledger.StopBudget(grace), Lost: stop}) // a runner renews its lease while it runs
//	rec, err = st.Finish(rec.ID, ledger.Completed, &code, "")
//	recovered, err := st.Recover(30 * time.Second)
//	recovered, err = st.RecoverHost("web-2") // a host known to be dead for good
//
// # Storage
//
// One table, tether.executions, holds a row per execution, and
// tether.schema_version the schema's version (see Schema, Tables). The
// first claim in a database creates them, under a transaction-level
// advisory lock so that hosts starting at once do not race; reads of a
// database without them find nothing and create nothing.
//
// Every transition is one conditional statement (UPDATE ... WHERE id = $1
// AND status ... RETURNING), the compare-and-swap: of racing callers on any
// hosts exactly one matches the row. A refusal reads the row once more,
// only to word the refusal as the file store does (ledger.Transition). A
// claim with an instant is one INSERT ... ON CONFLICT DO NOTHING against a
// unique index on (job, instant) over the blocking statuses, so one claim
// wins across every host; only when it conflicts is the holder read (and
// recovered, if its owner is gone). A claim with Exclusive judges the
// job's open executions and inserts while holding a transaction-level
// advisory lock on the job, so exclusive claims on several hosts serialise.
// Statements go out unprepared in the extended protocol (pgx's
// QueryExecModeExec): one round trip each, with no preparation to repay in
// a process that makes two or three.
//
// # Owners and leases
//
// An owner is judged by its PID only where its boot id and PID namespace
// are the judge's own (ledger.JudgeRecord). Any other owner is remote: it
// is judged by its lease alone, an expiry time kept by the SERVER's clock
// (now() + the lease, never a client's time). An owner that records a
// lease renews it while it runs (KeepLease; a beat renews it too); a
// record whose lease ran out is as dead as a local owner whose PID is
// gone. A remote record without a lease is never judged (uncertain), but
// by RecoverHost, which an operator uses for a host that will not return.
//
// A result recorded after recovery ended the execution (the owner was cut
// off from the database longer than its lease) is refused like any finish
// of a terminal execution, and kept on the record as Late, the status
// unchanged.
//
// # Connections
//
// The location is a postgres:// or postgresql:// URL; libpq's conventions
// apply (PGHOST, PGUSER, PGPASSWORD, ~/.pgpass, PGSSLMODE, a unix-socket
// host); so does libpq's keyword/value form ("host=/run/postgresql
// dbname=jobs", "service=jobs"). Connecting gives up after ConnectTimeout
// (or the URL's connect_timeout) and every statement after
// StatementTimeout (or the URL's statement_timeout, in milliseconds;
// server side, and the client's context), so nothing waits forever.
// Location() never shows a password.
//
// # Faults
//
// A runner renews its lease on a connection of its own, each try bounded
// (Store.KeepLease; one that must connect first, by when the lease is
// given up) and made on a fresh connection after a failure;
// one that cannot renew in time stops its payload before the lease runs
// out (see Store.KeepLease and location.CheckLease for the arithmetic). A claim is one
// transaction, committed only by a COMMIT sent after the INSERT answered:
// a claim whose answer is lost is settled before the tool gives up
// (settleClaim): written failed, over the claim or in its place.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/location"
)

// Defaults of Options.
const (
	DefaultConnectTimeout   = 10 * time.Second
	DefaultStatementTimeout = 20 * time.Second
	DefaultLease            = 30 * time.Second
)

// ErrUnavailable: the database could not be reached or a statement did
// not complete (the connection broke, a timeout): nothing is known to have
// changed.
var ErrUnavailable = ledger.ErrUnavailable

// Options configure a Store.
type Options struct {
	// Lease, if positive, is the lease of the owners this handle records
	// (claim, adopt, start): lease_until = now() + Lease on the server.
	Lease time.Duration
	// ConnectTimeout bounds connecting (default DefaultConnectTimeout,
	// or the URL's connect_timeout).
	ConnectTimeout time.Duration
	// StatementTimeout bounds each statement (DefaultStatementTimeout).
	StatementTimeout time.Duration
	// Clock, for tests, is the time transitions record; nil takes the
	// server's now(). Leases always run on the server's clock.
	Clock func() time.Time
	// Existing is for commands that only read: in a database where no
	// claim ever created the schema, reads fail with ledger.ErrNoStore
	// instead of finding nothing.
	Existing bool
}

// Store is a ledger in one PostgreSQL database. It is safe for concurrent
// use; its statements go one at a time over its one connection.
type Store struct {
	mu       sync.Mutex
	conn     *pgx.Conn
	cfg      *pgx.ConnConfig
	loc      string
	password string
	// secrets are what location.Redact hid of the location (Secrets),
	// scrubbed from the driver's messages with the password.
	secrets []string
	opts    Options
	// pageSize is how many rows Each fetches per statement (eachPage;
	// tests make it small).
	pageSize int
	// legacy: a statement found a column of SchemaVersion missing, and
	// reads select v2Cols (Store.cols); migrated: the schema was then
	// migrated (or could not be), once (doLocked).
	legacy, migrated bool
}

var _ ledger.Ledger = (*Store)(nil)

// Open connects to the database named by location (a postgres:// URL).
// An unreachable server is ErrUnavailable; a malformed URL ErrBadInput.
func Open(loc string, o Options) (*Store, error) {
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.StatementTimeout <= 0 {
		o.StatementTimeout = DefaultStatementTimeout
	}
	s := &Store{loc: location.Redact(loc), opts: o, pageSize: eachPage}
	if !location.IsPostgres(loc) {
		return nil, fmt.Errorf("%w: %s is not a postgres:// URL", ledger.ErrBadInput, s.loc)
	}
	s.secrets = location.Secrets(loc)
	cfg, err := pgx.ParseConfig(loc)
	if err != nil {
		// The driver's message quotes its own reading of loc, whose
		// redaction is not Redact's (an unclosed quote, an escaped space
		// show a password's tail): only its cause is said.
		return nil, fmt.Errorf("%w: ledger database %s: not a connection string the driver reads (a postgres:// URL or libpq's key=value form)", ledger.ErrBadInput, s.loc)
	}
	s.password = cfg.Password
	if v, ok := cfg.RuntimeParams["statement_timeout"]; ok {
		// The URL's statement_timeout (milliseconds) bounds the client's
		// wait for a statement too.
		if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms > 0 {
			o.StatementTimeout = time.Duration(ms) * time.Millisecond
			s.opts.StatementTimeout = o.StatementTimeout
		}
	}
	if cfg.ConnectTimeout <= 0 || cfg.ConnectTimeout > o.ConnectTimeout {
		cfg.ConnectTimeout = o.ConnectTimeout
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeExec
	if _, ok := cfg.RuntimeParams["statement_timeout"]; !ok {
		cfg.RuntimeParams["statement_timeout"] = fmt.Sprint(o.StatementTimeout.Milliseconds())
	}
	if _, ok := cfg.RuntimeParams["lock_timeout"]; !ok {
		cfg.RuntimeParams["lock_timeout"] = fmt.Sprint(o.StatementTimeout.Milliseconds())
	}
	if _, ok := cfg.RuntimeParams["idle_in_transaction_session_timeout"]; !ok {
		cfg.RuntimeParams["idle_in_transaction_session_timeout"] = fmt.Sprint(o.StatementTimeout.Milliseconds())
	}
	if _, ok := cfg.RuntimeParams["application_name"]; !ok {
		cfg.RuntimeParams["application_name"] = "tether ledger"
	}
	s.cfg = cfg
	if err := s.connect(); err != nil {
		return nil, err
	}
	if o.Existing {
		// A read must not answer "nothing" for a database that never held
		// a ledger (a mistyped URL): it says so, as the file store does.
		var ok bool
		err := s.do(func(ctx context.Context, c *pgx.Conn) error {
			return c.QueryRow(ctx, `SELECT to_regclass('tether.executions') IS NOT NULL`).Scan(&ok)
		})
		if err == nil && !ok {
			err = s.noStore(&pgconn.PgError{Code: "42P01"})
		}
		if err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// connect (re)opens the connection, giving up after the connect timeout.
func (s *Store) connect() error {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ConnectTimeout+time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, s.cfg)
	if err != nil {
		return fmt.Errorf("%w: cannot connect to %s: %s", ErrUnavailable, s.loc, s.scrub(err))
	}
	s.conn = conn
	return nil
}

// scrub returns err's text without the password, should a driver message
// ever quote it.
func (s *Store) scrub(err error) string {
	msg := err.Error()
	if s.password != "" {
		msg = strings.ReplaceAll(msg, s.password, "xxxxx")
	}
	// What Redact hid, as the driver may have split it otherwise (a
	// password's tail read as the host name: "no such host QQ2@h").
	for _, secret := range s.secrets {
		msg = strings.ReplaceAll(msg, secret, "xxxxx")
	}
	return oneLine(msg)
}

// oneLine joins a driver message of several lines into one, as the
// diagnostic promises: pgx lists each host it tried on a line of its own
// ("failed to connect to `user=u database=d`:\n\tHOST: ...", twice for
// one refused host under sslmode=prefer, once with TLS and once without).
// A line said twice is said once; the others are joined by "; ".
func oneLine(msg string) string {
	if !strings.Contains(msg, "\n") {
		return msg
	}
	var parts []string
	for _, l := range strings.Split(msg, "\n") {
		if l = strings.TrimSpace(l); l != "" && !slices.Contains(parts, l) {
			parts = append(parts, l)
		}
	}
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	head, tried := parts[0], parts[1:]
	if strings.HasSuffix(head, ":") {
		return head + " " + strings.Join(tried, "; ")
	}
	return strings.Join(parts, "; ")
}

// Location names the store in messages: the URL without its password.
func (s *Store) Location() string { return s.loc }

// Gone reports false: a database does not vanish as a directory does;
// losing it is an error of the statement that finds out.
func (s *Store) Gone() bool { return false }

// Close closes the connection.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg = nil
	if s.conn == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := s.conn.Close(ctx)
	s.conn, s.cfg = nil, nil
	return err
}

// do runs fn with the connection, one caller at a time, under the
// statement timeout; a failure of the connection or a timeout becomes
// ErrUnavailable, and a password never shows in an error.
func (s *Store) do(fn func(ctx context.Context, c *pgx.Conn) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.doLocked(fn)
}

// doLocked is do for a caller that holds s.mu (Each, across statements).
func (s *Store) doLocked(fn func(ctx context.Context, c *pgx.Conn) error) error {
	if s.cfg == nil {
		return fmt.Errorf("%w: %s is closed", ErrUnavailable, s.loc)
	}
	if s.conn == nil || s.conn.IsClosed() {
		// A connection lost to a failure is opened again: a runner
		// records its result after the database came back.
		if err := s.connect(); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.StatementTimeout+2*time.Second)
	defer cancel()
	err := fn(ctx, s.conn)
	if undefinedColumn(err) && !s.legacy && !s.conn.IsClosed() {
		// A database an older release made, before any claim of this
		// one migrated it: a read selects NULL for what it lacks, and
		// succeeds; a read migrates nothing (a monitoring role may only
		// read).
		s.legacy = true
		s.rollback(ctx)
		err = fn(ctx, s.conn)
	}
	if undefinedColumn(err) && !s.migrated && !s.conn.IsClosed() {
		// A write that needs the columns (a finish or a recovery of an
		// execution an older release claimed): migrate, if the role
		// may (else the missing column is the answer), and try again.
		s.migrated = true
		s.rollback(ctx)
		if s.ensureSchema(ctx) == nil {
			err = fn(ctx, s.conn)
		}
	}
	return s.wrap(err)
}

// rollback ends the transaction a statement that failed left open on the
// connection (Each's cursor opens one by hand), so that it can be asked
// again.
func (s *Store) rollback(ctx context.Context) {
	if s.conn.PgConn().TxStatus() != 'I' {
		s.conn.Exec(ctx, `ROLLBACK`)
	}
}

// wrap classifies err: the package's and ledger's errors pass; a server
// error stays one (a system error, its message kept); anything else is
// the connection's trouble.
func (s *Store) wrap(err error) error {
	if err == nil {
		return nil
	}
	for _, known := range []error{ledger.ErrRefused, ledger.ErrNotFound, ledger.ErrBadID, ledger.ErrBadInput, ledger.ErrCorrupt, ledger.ErrClaimStopped, ErrUnavailable} {
		if errors.Is(err, known) {
			return err
		}
	}
	var pe *pgconn.PgError
	if errors.Is(err, pgx.ErrNoRows) || errors.As(err, &pe) && pe.Code != "57014" { // 57014: statement timeout / canceled
		return &dbError{msg: fmt.Sprintf("ledger database %s: %s", s.loc, s.scrub(err)), err: err}
	}
	return &dbError{msg: fmt.Sprintf("%s: %s: %s", ErrUnavailable, s.loc, s.scrub(err)), err: err, kind: ErrUnavailable}
}

// dbError is a driver's error as the store words it: the text scrubbed of
// any password, the cause still reachable (errors.Is, errors.As).
type dbError struct {
	msg  string
	err  error
	kind error
}

func (e *dbError) Error() string { return e.msg }

func (e *dbError) Unwrap() []error {
	if e.kind != nil {
		return []error{e.kind, e.err}
	}
	return []error{e.err}
}

// clock is the time a transition records: the test clock, else nil for
// the server's now().
func (s *Store) clock() *time.Time {
	if s.opts.Clock == nil {
		return nil
	}
	t := s.opts.Clock().UTC().Truncate(time.Microsecond)
	return &t
}

// idTime is the time an id is made from: the test clock or this host's.
func (s *Store) idTime() time.Time {
	if s.opts.Clock != nil {
		return s.opts.Clock()
	}
	return time.Now()
}

// lease is the lease this handle records, as an SQL interval parameter
// (nil: none).
func (s *Store) lease() any {
	if s.opts.Lease <= 0 {
		return nil
	}
	return leaseText(s.opts.Lease)
}

func leaseText(d time.Duration) string { return fmt.Sprintf("%d microseconds", d.Microseconds()) }

func init() {
	location.RegisterPostgres(func(loc string, o location.Options) (ledger.Ledger, error) {
		return Open(loc, Options{Lease: o.Lease, Existing: o.Existing})
	})
}
