package pgstore_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tether-sh/tether/internal/pgtest"
	"github.com/tether-sh/tether/internal/testutil"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/ledgertest"
	"github.com/tether-sh/tether/lib/ledger/pgstore"
)

// tool makes this test binary the ledger tool (see TestMain).
const tool = testutil.Role("PGSTORE_TEST_TOOL")

// ledgerCmd is `ledger ARGS...` with the store url, as a process.
func ledgerCmd(url string, args ...string) *exec.Cmd {
	return tool.Command("ledger", append([]string{"--ledger", url}, args...)...)
}

// run runs `ledger ARGS...` and returns its stdout, stderr and exit code.
func run(t *testing.T, url string, args ...string) (string, string, int) {
	t.Helper()
	c := ledgerCmd(url, args...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// TestCLIInstantRace: 100 processes claim one (job, instant): one wins,
// every other is refused (1).
func TestCLIInstantRace(t *testing.T) {
	url := newDB(t)
	const n = 100
	codes := make([]int, n)
	var wg sync.WaitGroup
	owner := fmt.Sprint(os.Getpid())
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, codes[i] = run(t, url, "claim", "tick", "--instant", "2024-05-01T10:00:00Z", "--owner", owner)
		}()
	}
	wg.Wait()
	won := 0
	for i, c := range codes {
		switch c {
		case 0:
			won++
		case 1:
		default:
			t.Errorf("claim %d exited %d; want 0 or 1", i, c)
		}
	}
	if won != 1 {
		t.Errorf("%d of %d claims of one instant won; want 1", won, n)
	}
}

// TestCLIExclusiveRace: processes racing for an exclusive claim of one
// job: one wins while its owner lives.
func TestCLIExclusiveRace(t *testing.T) {
	url := newDB(t)
	const n = 20
	codes := make([]int, n)
	var wg sync.WaitGroup
	owner := fmt.Sprint(os.Getpid())
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, codes[i] = run(t, url, "claim", "x", "--exclusive", "--owner", owner)
		}()
	}
	wg.Wait()
	won := 0
	for _, c := range codes {
		if c == 0 {
			won++
		}
	}
	if won != 1 {
		t.Errorf("%d of %d exclusive claims won; want 1 (codes %v)", won, n, codes)
	}
}

// TestLeaseRemoteOwner: an owner on another host is judged by its lease
// alone, on the server's clock: never before it runs out, and then as a
// local owner whose process is gone. Without a lease it is never judged.
func TestLeaseRemoteOwner(t *testing.T) {
	url := newDB(t)
	// A lease long enough that a loaded machine does the claims and the
	// first recover well within it, short enough to wait out.
	st := open(t, url, pgstore.Options{Lease: 6 * time.Second})
	noLease := open(t, url, pgstore.Options{})
	remote := ledgertest.Self(t)
	remote.Host, remote.BootID = "web-2", "00000000-0000-0000-0000-0000000000e2"
	claimed := ledgertest.MustClaim(t, st, "j", ledger.ClaimOptions{Owner: remote})
	running := ledgertest.MustClaim(t, st, "k", ledger.ClaimOptions{Owner: remote})
	started := ledgertest.Must(t)(st.Start(running.ID, nil))
	bare := ledgertest.MustClaim(t, noLease, "l", ledger.ClaimOptions{Owner: remote})
	if claimed.LeaseUntil.IsZero() || !bare.LeaseUntil.IsZero() {
		t.Fatalf("lease_until = %v and %v; want one set, one null", claimed.LeaseUntil, bare.LeaseUntil)
	}
	if got, err := noLease.Recover(time.Second); err != nil || len(got) != 0 {
		t.Fatalf("Recover within the lease = %v, %v; want nothing judged", got, err)
	}
	// Wait, by the server's clock, for both leases to run out (the start
	// renewed the running one's).
	waitServer(t, url, started.LeaseUntil)
	got, err := noLease.Recover(time.Second)
	if err != nil || len(got) != 2 {
		t.Fatalf("Recover after the lease = %v, %v; want 2", got, err)
	}
	for _, r := range got {
		want := map[string]ledger.Status{claimed.ID: ledger.Abandoned, running.ID: ledger.Unknown}[r.ID]
		if r.Status != want || !strings.Contains(r.Error, "lease ran out") {
			t.Errorf("Recover: %s = %s %q; want %s, lease ran out", r.ID, r.Status, r.Error, want)
		}
	}
	if r := ledgertest.Must(t)(noLease.Get(bare.ID)); r.Status != ledger.Claimed {
		t.Errorf("a remote claim without a lease = %s; want claimed (not judged)", r.Status)
	}
	// A lease renewed in time keeps its owner: beat renews it.
	kept := ledgertest.MustClaim(t, st, "m", ledger.ClaimOptions{Owner: remote})
	for range 3 {
		time.Sleep(time.Second)
		ledgertest.Must(t)(noLease.Beat(kept.ID, ledger.BeatOptions{}))
	}
	if got, err := noLease.Recover(time.Second); err != nil || len(got) != 0 {
		t.Errorf("Recover of a beaten lease = %v, %v; want nothing", got, err)
	}
	// recover --host declares web-2 dead at once, lease or not.
	gone, err := noLease.RecoverHost("web-2")
	if err != nil || len(gone) != 2 {
		t.Errorf("RecoverHost(web-2) = %v, %v; want the 2 open executions", gone, err)
	}
	me, _ := os.Hostname()
	if _, err := noLease.RecoverHost(me); !errors.Is(err, ledger.ErrBadInput) {
		t.Errorf("RecoverHost(this host) = %v; want ErrBadInput", err)
	}
}

// waitServer waits until the server's clock is past t.
func waitServer(t *testing.T, url string, until time.Time) {
	t.Helper()
	st := open(t, url, pgstore.Options{})
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		id := ledgertest.MustClaim(t, st, "clock", ledger.ClaimOptions{}).ID
		r := ledgertest.Must(t)(st.Get(id))
		if r.ClaimedAt.After(until) {
			return
		}
	}
	t.Fatalf("the server's clock did not pass %v", until)
}

// TestCLIKilledRunner: a runner killed with SIGKILL mid-run leaves its
// execution running; recover says unknown (here, by its PID).
func TestCLIKilledRunner(t *testing.T) {
	url := newDB(t)
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	c := ledgerCmd(url, "run", "job", "--lease", "2s", "--grace", "500ms", "--", "sh", "-c", "touch "+started+"; exec sleep 60")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFile(t, started, 20*time.Second)
	c.Process.Signal(syscall.SIGKILL)
	c.Wait()
	st := open(t, url, pgstore.Options{})
	r := ledgertest.Must(t)(st.Latest("job"))
	if r.Status != ledger.Running || r.LeaseUntil.IsZero() {
		t.Fatalf("after kill -9: %s lease %v; want running with a lease", r.Status, r.LeaseUntil)
	}
	// The payload dies with its runner (PDEATHSIG); recover may wait for it.
	var got ledger.Record
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if got = ledgertest.Must(t)(st.RecoverOne(r.ID)); got.Status.Terminal() {
			break
		}
	}
	if got.Status != ledger.Unknown {
		t.Fatalf("recover after kill -9 = %s; want unknown", got.Status)
	}
	// The killed runner's result never comes; a late one would be kept.
	_, stderr, code := run(t, url, "finish", r.ID, "--status", "completed", "--exit-code", "0")
	if code != 1 || !strings.Contains(stderr, "late") {
		t.Errorf("finish after recovery = %d %q; want 1, kept as late", code, stderr)
	}
	out, _, _ := run(t, url, "show", r.ID, "--json")
	var j struct {
		Status string `json:"status"`
		Late   *struct {
			Status   string `json:"status"`
			ExitCode *int   `json:"exit_code"`
		} `json:"late"`
	}
	if err := json.Unmarshal([]byte(out), &j); err != nil || j.Status != "unknown" || j.Late == nil || j.Late.Status != "completed" || j.Late.ExitCode == nil || *j.Late.ExitCode != 0 {
		t.Errorf("show --json after a late finish = %s; want unknown with late completed, exit 0", out)
	}
}

// TestCLIServerDown: with no server, a claim or a read fails in one line
// with 3, a run with 125 (its command did not run, as on a file store),
// and the payload never runs; a password in the URL shows nowhere.
func TestCLIServerDown(t *testing.T) {
	dir := t.TempDir()
	url := "postgres://tether:s3cr3t-pw@/x?host=" + dir + "&connect_timeout=2"
	marker := filepath.Join(dir, "ran")
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"claim", "j"}, 3},
		{[]string{"run", "j", "--", "touch", marker}, 125},
		{[]string{"run", "j", "--instant", "1700000000", "--exclusive", "--", "touch", marker}, 125},
		{[]string{"list", "--json"}, 3},
		{[]string{"recover"}, 3},
	} {
		args := tc.args
		out, stderr, code := run(t, url, args...)
		if code != tc.want || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || out != "" {
			t.Errorf("ledger %v with no server = %d, stdout %q, stderr %q; want %d and one line", args, code, out, stderr, tc.want)
		}
		if strings.Contains(stderr+out, "s3cr3t") {
			t.Errorf("ledger %v printed the password: %q", args, stderr)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the payload ran with no server")
	}
}

// TestCLIPasswordNeverShown: a password in a working URL shows in no
// message or output.
func TestCLIPasswordNeverShown(t *testing.T) {
	url := newDB(t)
	url = strings.Replace(url, "postgres:///", "postgres://tether:s3cr3t-pw@/", 1)
	id, stderr, code := run(t, url, "claim", "j", "--owner", fmt.Sprint(os.Getpid()))
	if code != 0 {
		t.Fatalf("claim = %d %q", code, stderr)
	}
	id = strings.TrimSpace(id)
	var all strings.Builder
	for _, args := range [][]string{
		{"show", id, "--json"}, {"adopt", id}, {"finish", id, "--status", "completed"}, {"finish", id, "--status", "completed"},
		{"show", "0zzzzzzzzzzzz-zzzzzz"}, {"list"}, {"recover", "--json"}, {"run", "j", "--", "sh", "-c", "exit 3"},
	} {
		out, stderr, _ := run(t, url, args...)
		all.WriteString(out + stderr)
	}
	if strings.Contains(all.String(), "s3cr3t") {
		t.Errorf("the password was printed:\n%s", all.String())
	}
	if s, err := pgstore.Open(url, pgstore.Options{}); err != nil || strings.Contains(s.Location(), "s3cr3t") {
		t.Errorf("Location() = %v, %v; want the password redacted", s, err)
	} else {
		s.Close()
	}
}

// TestCLILostDatabase: a database lost while the payload runs: a payload
// that ends before the lease is given up keeps its status, the result is
// retried for the lease, then the runner says so in one line and exits
// with the payload's status; one that runs on is stopped (TERM) before
// the lease could run out (TestCLIFence).
func TestCLILostDatabase(t *testing.T) {
	if srv == nil {
		pgtest.Unavailable(t, startErr)
	}
	own, err := pgtest.StartMain()
	if err != nil {
		pgtest.Unavailable(t, err)
	}
	defer own.Stop()
	url, err := own.CreateDB()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	started, proceed := filepath.Join(dir, "started"), filepath.Join(dir, "go")
	// The payload must end before the lease is given up, 7s after its
	// last renewal: Stop (the server's death, then the removal of its
	// files) took over a second under load, enough to give up a 2s lease.
	c := ledgerCmd(url, "run", "job", "--lease", "8s", "--grace", "500ms", "--", "sh", "-c",
		"touch "+started+"; while [ ! -e "+proceed+" ]; do sleep 0.05; done; exit 7")
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFile(t, started, 20*time.Second)
	own.Stop()
	os.WriteFile(proceed, nil, 0o600)
	err = c.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("ledger run with the database lost = %v; want the payload's status 7 (stderr %q)", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "could not record the result") {
		t.Errorf("stderr = %q; want it to say the result could not be recorded", stderr.String())
	}
}

// TestCLIFence: a runner whose database is gone cannot renew its lease: it
// stops its payload (TERM, the grace, KILL) before the lease runs out, says
// so, and exits with the payload's status.
func TestCLIFence(t *testing.T) {
	if srv == nil {
		pgtest.Unavailable(t, startErr)
	}
	own, err := pgtest.StartMain()
	if err != nil {
		pgtest.Unavailable(t, err)
	}
	defer own.Stop()
	url, err := own.CreateDB()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	c := ledgerCmd(url, "run", "job", "--lease", "2s", "--grace", "500ms", "--", "sh", "-c", "touch "+started+"; exec sleep 60")
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFile(t, started, 20*time.Second)
	own.Stop()
	err = c.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 128+15 {
		t.Fatalf("ledger run with the database lost = %v; want 143, the payload stopped by TERM (stderr %q)", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "stopping its command before the lease runs out") {
		t.Errorf("stderr = %q; want it to say the command is stopped before the lease runs out", stderr.String())
	}
}
