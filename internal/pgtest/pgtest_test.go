//go:build linux

package pgtest

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/proc"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/internal/testutil"
)

func TestStart(t *testing.T) {
	s := Start(t)

	// Two databases, two states: a table made in one is not in the other.
	a, b := s.NewDB(t), s.NewDB(t)
	if a == b {
		t.Fatalf("NewDB() twice = %q, %q; want two databases", a, b)
	}
	dbA := strings.TrimPrefix(strings.SplitN(a, "?", 2)[0], "postgres:///")
	dbB, err := s.CreateDBName()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Psql(dbA, "CREATE TABLE x(i int); INSERT INTO x VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Psql(dbA, "SELECT count(*) FROM x"); err != nil || got != "1" {
		t.Fatalf("Psql(%s, count) = %q, %v; want 1", dbA, got, err)
	}
	if got, err := s.Psql(dbB, "SELECT to_regclass('x') IS NULL"); err != nil || got != "t" {
		t.Fatalf("Psql(%s, x exists?) = %q, %v; want t (no table x)", dbB, got, err)
	}

	// Durability as a user's server has it, and no TCP at all.
	for setting, want := range map[string]string{
		"fsync":              "on",
		"synchronous_commit": "on",
		"listen_addresses":   "",
	} {
		if got, err := s.Psql(dbA, "SHOW "+setting); err != nil || got != want {
			t.Errorf("SHOW %s = %q, %v; want %q", setting, got, err, want)
		}
	}

	// As root the server runs as an unprivileged user.
	pid := s.proc.Process.Pid
	uid := procUID(t, pid)
	if os.Geteuid() == 0 && uid == 0 {
		t.Errorf("postmaster %d runs as uid 0; want an unprivileged user", pid)
	}
	if os.Geteuid() != 0 && uid != os.Geteuid() {
		t.Errorf("postmaster %d runs as uid %d; want this test's %d", pid, uid, os.Geteuid())
	}

	// Stop leaves nothing behind: no process, no folder.
	s.Stop()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("after Stop, kill(%d, 0) = %v; want ESRCH", pid, err)
	}
	if _, err := os.Stat(s.SocketDir); !os.IsNotExist(err) {
		t.Errorf("after Stop, stat(%s) = %v; want not exist", s.SocketDir, err)
	}
	s.Stop() // twice is fine
}

func procUID(t *testing.T, pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "Uid:" {
			n, _ := strconv.Atoi(f[2]) // effective
			return n
		}
	}
	t.Fatalf("/proc/%d/status: no Uid line", pid)
	return -1
}

func TestDSN(t *testing.T) {
	s := &Server{SocketDir: "/tmp/pgtest-1", User: "tether"}
	for _, tt := range []struct{ db, want string }{
		{"t1", "postgres:///t1?host=%2Ftmp%2Fpgtest-1&user=tether"},
		{"postgres", "postgres:///postgres?host=%2Ftmp%2Fpgtest-1&user=tether"},
	} {
		if got := s.DSN(tt.db); got != tt.want {
			t.Errorf("DSN(%q) = %q; want %q", tt.db, got, tt.want)
		}
	}
	if got, want := s.DSNAs("t2", "tether_jobs"), "postgres:///t2?host=%2Ftmp%2Fpgtest-1&user=tether_jobs"; got != want {
		t.Errorf("DSNAs(t2, tether_jobs) = %q; want %q", got, want)
	}
}

func TestCompareVersions(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		sign int
	}{
		{"15", "9.6", 1},
		{"9.6", "15", -1},
		{"16", "15", 1},
		{"15", "15", 0},
		{"9.6", "9.5", 1},
	} {
		got := compareVersions(tt.a, tt.b)
		if (got > 0) != (tt.sign > 0) || (got < 0) != (tt.sign < 0) {
			t.Errorf("compareVersions(%q, %q) = %d; want sign %d", tt.a, tt.b, got, tt.sign)
		}
	}
}

// fakeTB records how Unavailable ended a test.
type fakeTB struct {
	testing.TB
	ended string
}

func (f *fakeTB) Helper()               {}
func (f *fakeTB) Skipf(string, ...any)  { f.ended = "skip" }
func (f *fakeTB) Fatal(...any)          { f.ended = "fail" }
func (f *fakeTB) Fatalf(string, ...any) { f.ended = "fail" }
func (f *fakeTB) Cleanup(func())        {}
func (f *fakeTB) Logf(string, ...any)   {}

func TestUnavailablePolicy(t *testing.T) {
	other := errors.New("pgtest: initdb: exit status 1")
	for _, tt := range []struct {
		name string
		ci   string
		err  error
		want string
	}{
		{"missing, not CI", "", fmt.Errorf("pgtest: %w", ErrNoServer), "skip"},
		{"missing, CI", "true", fmt.Errorf("pgtest: %w", ErrNoServer), "fail"},
		{"broken, not CI", "", other, "fail"},
		{"broken, CI", "true", other, "fail"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("CI", tt.ci)
			f := &fakeTB{}
			Unavailable(f, tt.err)
			if f.ended != tt.want {
				t.Errorf("Unavailable(%v) with CI=%q ended the test with %q; want %q", tt.err, tt.ci, f.ended, tt.want)
			}
		})
	}
}

func TestBinDirMissing(t *testing.T) {
	old := debianBins
	debianBins = filepath.Join(t.TempDir(), "*", "bin")
	t.Cleanup(func() { debianBins = old })
	t.Setenv("PATH", t.TempDir())
	if dir, err := BinDir(); !errors.Is(err, ErrNoServer) {
		t.Errorf("BinDir() with nothing installed = %q, %v; want ErrNoServer", dir, err)
	}
}

// TestOrphanHelper is the test binary killed by TestServerDiesWithTests:
// it starts a server, prints the postmaster's PID and socket folder, and
// waits to be killed; as a test of its own it does nothing.
func TestOrphanHelper(t *testing.T) {
	orphanHelper.Serve(func(string, []string) int {
		s, err := StartMain()
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		fmt.Println(s.proc.Process.Pid, s.SocketDir)
		select {}
	})
}

// orphanHelper makes the test binary TestOrphanHelper's server holder.
const orphanHelper = testutil.Role("PGTEST_ORPHAN_HELPER")

// A test binary killed without its cleanup takes its server down with it:
// no postmaster outlives the tests.
func TestServerDiesWithTests(t *testing.T) {
	if _, err := BinDir(); err != nil {
		Unavailable(t, err)
	}
	// The orphaned postmaster comes to this process, not to an init that
	// might never reap it: the test leaves no zombie either.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	c := orphanHelper.Command("1", "-test.run=^TestOrphanHelper$")
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	var pid int
	var dir string
	if _, serr := fmt.Sscan(line, &pid, &dir); err != nil || serr != nil {
		c.Process.Kill()
		c.Wait()
		t.Fatalf("helper said %q, %v; want PID and folder", line, err)
	}
	defer os.RemoveAll(dir) // the helper could not clean up its folder
	c.Process.Kill()
	c.Wait()

	pidfd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return // gone already
	}
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pidfd)
	// The postmaster is not our child: wait on its pidfd, boundedly.
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(startLimit.Milliseconds()))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("postmaster %d alive %v after its test binary was killed; want it gone", pid, startLimit)
		}
		var ws unix.WaitStatus
		unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		return
	}
}

// startWith starts a server with opts for t, and a database on it: t is
// skipped without libfaketime (a failure when CI is set), as without a
// server.
func startWith(t *testing.T, opts Options) (*Server, string) {
	s, err := StartMainWith(opts)
	if errors.Is(err, ErrNoFaketime) && !CI() {
		t.Skip(err)
	}
	if err != nil {
		Unavailable(t, err)
	}
	t.Cleanup(s.Stop)
	db, err := s.CreateDBName()
	if err != nil {
		t.Fatal(err)
	}
	return s, db
}

// TestKill: a Killable server killed with SIGKILL comes back with what it
// had committed, and every process of the old one is gone and reaped: no
// orphaned backend left for an init that may never reap it.
func TestKill(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a Killable server needs root")
	}
	s, db := startWith(t, Options{Killable: true})
	if _, err := s.Psql(db, "CREATE TABLE x(i int); INSERT INTO x VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	old := s.postmaster
	if uid := procUID(t, old); uid == 0 {
		t.Errorf("postmaster %d runs as uid 0; want an unprivileged user", old)
	}
	var backends []int
	kids, _ := proc.Children(old)
	for _, k := range kids {
		backends = append(backends, k.PID)
	}
	if len(backends) == 0 {
		t.Fatalf("postmaster %d has no children in /proc; want its background processes", old)
	}
	if err := s.Kill(); err != nil {
		t.Fatalf("Kill() = %v", err)
	}
	for _, pid := range append(backends, old) {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			t.Errorf("after Kill, old server process %d: kill(0) = %v (%s); want ESRCH: gone and reaped", pid, err, b)
		}
	}
	if got, err := s.Psql(db, "SELECT i FROM x"); err != nil || got != "7" {
		t.Errorf("after Kill, SELECT i FROM x = %q, %v; want 7", got, err)
	}
	if s.postmaster == old {
		t.Errorf("after Kill, the postmaster is still %d; want a new one", old)
	}
}

// TestSetClock: a FakeClock server's now() jumps forward and back with
// SetClock, within the second its processes cache the offset.
func TestSetClock(t *testing.T) {
	s, db := startWith(t, Options{FakeClock: true})
	// ahead is how far the server's clock is ahead of ours, in seconds.
	ahead := func() float64 {
		got, err := s.Psql(db, "SELECT extract(epoch FROM clock_timestamp())")
		if err != nil {
			t.Fatal(err)
		}
		at, err := strconv.ParseFloat(got, 64)
		if err != nil {
			t.Fatalf("server epoch %q: %v", got, err)
		}
		return at - float64(time.Now().UnixNano())/1e9
	}
	for _, offset := range []time.Duration{time.Hour, -time.Hour, 0} {
		if err := s.SetClock(offset); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(time.Minute)
		for {
			a := ahead()
			if math.Abs(a-offset.Seconds()) < 30 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after SetClock(%v), the server's clock is %.1fs ahead; want %v", offset, a, offset)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
