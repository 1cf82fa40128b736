// Package pgtest starts a throwaway PostgreSQL server for tests: initdb
// into a temporary folder, a unix socket only, an unprivileged server user
// when the tests run as root, and a fresh database per test.
//
//	srv := pgtest.Start(t)        // one cluster, gone at t's cleanup
//	dsn := srv.NewDB(t)           // postgres:///t1?host=/tmp/pgtest-…&user=tether
//
// A package that wants one server for all its tests starts it from
// TestMain with StartMain and stops it with Server.Stop.
//
// The server binaries are looked for in /usr/lib/postgresql/*/bin (Debian's
// layout, newest version first), then in $PATH. Where there are none the
// test is skipped with one line; with CI=true (as .ci/run sets) it fails
// instead, so that CI never passes by not testing.
//
// The cluster runs with fsync on and synchronous_commit on, as a user's
// does: the ledger's guarantees are about what a commit survives, and the
// benchmark built on this package must pay what a real store pays. Only
// initdb runs with --no-sync, since a cluster that is thrown away after
// the tests needs no durable bootstrap.
package pgtest

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// ErrNoServer reports that no PostgreSQL server binaries were found.
var ErrNoServer = errors.New("no PostgreSQL server binaries (initdb, postgres) in /usr/lib/postgresql/*/bin or $PATH")

// Superuser is the cluster's superuser role; trust authentication on the
// private socket lets any local process connect as it.
const Superuser = "tether"

// startLimit bounds initdb and the server's start: generous, because a
// loaded 2-core CI machine is slow, but a broken start fails instead of
// hanging.
const startLimit = 2 * time.Minute

// debianBins is where Debian's postgresql-V packages put the binaries; a
// variable for the tests of the skip policy.
var debianBins = "/usr/lib/postgresql/*/bin"

// Server is a running throwaway cluster.
type Server struct {
	// BinDir holds initdb, postgres and psql.
	BinDir string
	// SocketDir is the directory of the server's unix socket: the host
	// part of every DSN.
	SocketDir string
	// User is the role the DSNs connect as (Superuser).
	User string

	dir        string // the temporary folder holding everything
	opts       Options
	cred       *syscall.Credential
	proc       *exec.Cmd // the postmaster, or the unshare(1) it runs under (Killable)
	postmaster int       // the postmaster's PID, as this process sees it
	exited     chan struct{}
	stopped    atomic.Bool
	dbs        atomic.Int64
}

// CI reports whether a missing server must fail rather than skip.
func CI() bool { return os.Getenv("CI") == "true" }

// BinDir returns the directory of the newest PostgreSQL server binaries:
// /usr/lib/postgresql/VERSION/bin on Debian, else the directory of initdb
// in $PATH. It wraps ErrNoServer when there are none.
func BinDir() (string, error) {
	dirs, _ := filepath.Glob(debianBins)
	// Newest major version first: 16 before 15 before 9.6.
	slices.SortFunc(dirs, func(a, b string) int {
		return compareVersions(filepath.Base(filepath.Dir(b)), filepath.Base(filepath.Dir(a)))
	})
	for _, d := range dirs {
		if hasServer(d) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if p, err := filepath.EvalSymlinks(p); err == nil && hasServer(filepath.Dir(p)) {
			return filepath.Dir(p), nil
		}
	}
	return "", fmt.Errorf("pgtest: %w", ErrNoServer)
}

// compareVersions orders "15" and "9.6" numerically, part by part.
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) || i < len(bs); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x - y
		}
	}
	return 0
}

func hasServer(dir string) bool {
	for _, b := range []string{"initdb", "postgres", "psql"} {
		if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

// Start starts a cluster for tb and stops it, removing every file, at tb's
// cleanup. Without server binaries it skips tb, or fails it when CI=true.
func Start(tb testing.TB) *Server {
	tb.Helper()
	s, err := StartMain()
	if err != nil {
		Unavailable(tb, err)
		return nil
	}
	tb.Cleanup(s.Stop)
	return s
}

// Unavailable ends tb for a server that could not start: a skip with one
// line when there are no server binaries and CI is not set, else a
// failure.
func Unavailable(tb testing.TB, err error) {
	tb.Helper()
	if errors.Is(err, ErrNoServer) && !CI() {
		tb.Skipf("%v; install Debian's postgresql to run this test", err)
		return
	}
	tb.Fatal(err)
}

// StartMain starts a cluster outside any test, for TestMain; the caller
// stops it with Stop. The error wraps ErrNoServer when there are no server
// binaries, so that the caller can apply the skip policy (see CI).
func StartMain() (*Server, error) { return StartMainWith(Options{}) }

// StartMainWith is StartMain for a server given the faults of opts.
func StartMainWith(opts Options) (*Server, error) {
	if opts.Killable && os.Geteuid() != 0 {
		return nil, errors.New("pgtest: a Killable server needs root: unshare --pid")
	}
	if opts.FakeClock {
		if _, err := faketimeLib(); err != nil {
			return nil, err
		}
	}
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	cred, err := serverCredential()
	if err != nil {
		return nil, err
	}
	// Not testing.TB.TempDir: its parents are 0700 and root's, where an
	// unprivileged server cannot reach. A short path, too: a unix socket's
	// path must fit in 107 bytes.
	dir, err := os.MkdirTemp(socketBase(), "pgtest-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	s := &Server{BinDir: bin, SocketDir: dir, User: Superuser, dir: dir, opts: opts}
	if opts.FakeClock {
		if err := s.SetClock(0); err != nil {
			s.Stop()
			return nil, err
		}
	}
	if err := s.start(cred); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// socketBase is $TMPDIR when a socket path under it fits, else /tmp.
func socketBase() string {
	d := os.TempDir()
	if len(d)+len("/pgtest-1234567890/.s.PGSQL.5432") > 100 {
		return "/tmp"
	}
	return d
}

// serverCredential is nil when the server can run as this process's user,
// else (as root: PostgreSQL refuses to) Debian's postgres user, or nobody.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		// No supplementary groups: none of root's.
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
	}
	return nil, errors.New("pgtest: running as root and there is no postgres or nobody user to run the server as")
}

func (s *Server) start(cred *syscall.Credential) error {
	data := filepath.Join(s.dir, "data")
	if cred != nil {
		// The socket directory stays 0755 so that any local user (a
		// scenario dropping privileges) can reach the socket; the data
		// directory is initdb's, 0700.
		if err := os.Chown(s.dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return fmt.Errorf("pgtest: %w", err)
		}
	}
	if err := os.Chmod(s.dir, 0o755); err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}

	initdb := s.command(cred, "initdb",
		"--pgdata="+data, "--username="+Superuser, "--auth=trust",
		"--encoding=UTF8", "--no-locale", "--no-sync", "--no-instructions")
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("pgtest: initdb: %v\n%s", err, out)
	}
	s.cred = cred
	return s.run()
}

// run starts the postmaster on the cluster initdb made and waits until it
// is ready.
func (s *Server) run() error {
	cred, data := s.cred, filepath.Join(s.dir, "data")

	// The postmaster itself, not pg_ctl: it stays this process's child, so
	// Stop can wait for it, and PDEATHSIG takes it down (as pg_ctl stop -m
	// immediate would, SIGQUIT) should the test binary die without its
	// cleanup, so that no server outlives its tests.
	log, err := os.OpenFile(filepath.Join(s.dir, "server.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer log.Close()
	args := []string{
		"-D", data,
		"-c", "listen_addresses=",
		"-c", "unix_socket_directories=" + s.dir,
		"-c", "fsync=on",
		"-c", "synchronous_commit=on",
		// Up to 4 hosts × 8 loops, each tool with a lease connection,
		// beside the parallel scenarios.
		"-c", "max_connections=300",
		"-c", "shared_buffers=32MB",
		"-c", "log_min_messages=warning",
	}
	if s.hasStatements() {
		// Lets a test or the benchmark count round trips per operation.
		args = append(args, "-c", "shared_preload_libraries=pg_stat_statements")
	}
	// A postmaster killed with SIGKILL left its postmaster.pid saying
	// "ready": the new one is ready once the file is its own.
	stale, _ := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	s.proc = s.command(cred, "postgres", args...)
	if s.opts.Killable {
		// unshare runs as root and becomes the server's user only in the
		// child, the namespace's init; --kill-child passes a death of
		// unshare (the test binary's, through PDEATHSIG) on as SIGQUIT.
		pre := []string{"--pid", "--fork", "--kill-child=SIGQUIT"}
		if cred != nil {
			pre = append(pre, "--setuid", strconv.Itoa(int(cred.Uid)), "--setgid", strconv.Itoa(int(cred.Gid)))
		}
		s.proc.Args = append(append([]string{"unshare"}, pre...), s.proc.Args...)
		s.proc.Path, err = exec.LookPath("unshare")
		if err != nil {
			return fmt.Errorf("pgtest: a Killable server: %w", err)
		}
		s.proc.SysProcAttr.Credential = nil
	}
	if s.opts.FakeClock {
		lib, err := faketimeLib()
		if err != nil {
			return err
		}
		// The offset file is read again at most once a second by every
		// process: a jump reaches every backend within a second.
		s.proc.Env = append(s.proc.Env, "LD_PRELOAD="+lib, "FAKETIME_TIMESTAMP_FILE="+s.clockFile(),
			"FAKETIME_CACHE_DURATION=1", "FAKETIME_DONT_FAKE_MONOTONIC=1")
	}
	s.proc.Stdout, s.proc.Stderr = log, log
	dieWithParent(s.proc.SysProcAttr)
	if err := s.proc.Start(); err != nil {
		s.proc = nil
		return fmt.Errorf("pgtest: postgres: %w", err)
	}
	s.exited = make(chan struct{})
	go func() { s.proc.Wait(); close(s.exited) }()
	s.postmaster = s.proc.Process.Pid
	if err := s.waitReady(data, stale); err != nil {
		return err
	}
	if s.opts.Killable {
		if s.postmaster = childOf(s.proc.Process.Pid); s.postmaster == 0 {
			return errors.New("pgtest: the postmaster under unshare is not to be found in /proc")
		}
	}
	return nil
}

// hasStatements reports whether the pg_stat_statements extension is
// installed beside the server (Debian: /usr/lib/postgresql/V/lib).
func (s *Server) hasStatements() bool {
	_, err := os.Stat(filepath.Join(filepath.Dir(s.BinDir), "lib", "pg_stat_statements.so"))
	return err == nil
}

// command runs a server binary as cred's user, with an environment free of
// the caller's PG* settings.
func (s *Server) command(cred *syscall.Credential, name string, args ...string) *exec.Cmd {
	c := exec.Command(filepath.Join(s.BinDir, name), args...)
	c.Dir = s.dir
	c.Env = cleanEnv()
	c.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	return c
}

func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") && !strings.HasPrefix(kv, "LC_") && !strings.HasPrefix(kv, "LANG") {
			env = append(env, kv)
		}
	}
	return append(env, "LANG=C")
}

// waitReady waits until postmaster.pid, other than stale, says "ready"
// (what pg_ctl start -w waits for), or the server exits, or startLimit
// passes.
func (s *Server) waitReady(data string, stale []byte) error {
	deadline := time.After(startLimit)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		b, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
		if err == nil && !bytes.Equal(b, stale) {
			// Line 8 is the postmaster's status (PM_STATUS_READY).
			lines := strings.Split(string(b), "\n")
			if len(lines) > 7 && strings.TrimSpace(lines[7]) == "ready" {
				return nil
			}
		}
		select {
		case <-s.exited:
			return fmt.Errorf("pgtest: postgres exited at start: %s", s.logTail())
		case <-deadline:
			return fmt.Errorf("pgtest: postgres not ready after %v: %s", startLimit, s.logTail())
		case <-tick.C:
		}
	}
}

func (s *Server) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}

// Stop stops the server at once (SIGQUIT: pg_ctl stop -m immediate) and
// removes its folder. It may be called more than once.
func (s *Server) Stop() {
	if s.stopped.Swap(true) {
		return
	}
	if s.proc != nil && s.proc.Process != nil {
		s.quit()
	}
	os.RemoveAll(s.dir)
}

// Crash stops the server as a crash would (SIGQUIT: immediate shutdown,
// no checkpoint; what was committed survives through the WAL, nothing
// else) and starts it again on the same data, waiting until it is ready.
// Clients' connections are cut.
func (s *Server) Crash() error {
	if s.stopped.Load() {
		return errors.New("pgtest: server stopped")
	}
	s.quit()
	return s.run()
}

// quit shuts the server down at once (SIGQUIT to the postmaster) and waits
// until it has exited; KILL after 30s.
func (s *Server) quit() {
	syscall.Kill(s.postmaster, syscall.SIGQUIT)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		syscall.Kill(s.postmaster, syscall.SIGKILL)
		s.proc.Process.Kill()
		<-s.exited
	}
}

// DSN is the URL of database db on the server, as the superuser.
func (s *Server) DSN(db string) string { return s.DSNAs(db, s.User) }

// DSNAs is the URL of database db on the server as role user (trust
// authentication: no password).
func (s *Server) DSNAs(db, user string) string {
	u := url.URL{Scheme: "postgres", Path: "/" + db}
	u.RawQuery = "host=" + url.QueryEscape(s.SocketDir) + "&user=" + url.QueryEscape(user)
	return u.String()
}

// CreateDB creates a fresh database and returns its DSN.
func (s *Server) CreateDB() (string, error) {
	name, err := s.CreateDBName()
	if err != nil {
		return "", err
	}
	return s.DSN(name), nil
}

// CreateDBName creates a fresh database and returns its name.
func (s *Server) CreateDBName() (string, error) {
	name := fmt.Sprintf("t%d", s.dbs.Add(1))
	if _, err := s.Psql("postgres", "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	return name, nil
}

// NewDB creates a fresh database for tb, so that tests do not share state,
// and returns its DSN. It is dropped with the server.
func (s *Server) NewDB(tb testing.TB) string {
	tb.Helper()
	dsn, err := s.CreateDB()
	if err != nil {
		tb.Fatal(err)
	}
	return dsn
}

// Psql runs sql (one or more statements) in database db with psql, as
// the superuser, and returns its unaligned, tuples-only output.
func (s *Server) Psql(db, sql string) (string, error) {
	c := exec.Command(filepath.Join(s.BinDir, "psql"),
		"-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", s.DSN(db), "-c", sql)
	c.Env = cleanEnv()
	var out, stderr bytes.Buffer
	c.Stdout, c.Stderr = &out, &stderr
	if err := c.Run(); err != nil {
		return "", fmt.Errorf("pgtest: psql %q: %v: %s", sql, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(out.String()), nil
}
