//go:build linux

package tether_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether-sh/tether/internal/testutil"
)

// The simulated fleet (issue #12): "hosts" are children of
// `unshare --uts --pid --fork --mount-proc`, each with its own host name
// and PID namespace, all on one PostgreSQL over its unix socket, driving
// the ledger CLI (this test binary under the name ledger, as in the
// scenarios). Each host also has a boot id of its own, a file bound over
// /proc/sys/kernel/random/boot_id in its mount namespace: hosts on one
// kernel would otherwise share the real one, and the ledger would judge
// another "host"'s owners as this machine's (a dead namespace's inode is
// soon reused by a new one, and then its PIDs read as ours, and gone),
// before their lease, as it rightly may on one machine.

const (
	fleetHosts = 4
	fleetLoops = 8
	fleetSlots = 12
	// fleetLease is every lease of the fleet: short, to keep the test
	// fast, but long enough that a renewal succeeds on a loaded 2-core
	// machine. With 2 s (a renewal interval of (2 s - 0.5 s - 0.5 s)/3,
	// 0.33 s, which bounded a try that had to connect too) a host under
	// TestLedgerPostgresFleetHostDies lost its lease while alive, as it
	// should when its database cannot be reached in time.
	fleetLease = 4 * time.Second
	// fleetLimit bounds every wait of the fleet on a loaded machine.
	fleetLimit = 2 * time.Minute
)

// fleet is one PostgreSQL database and a bin folder holding ledger.
type fleet struct {
	t   *testing.T
	dsn string
	bin string
	dir string // shared scratch folder, for files the payloads write
}

func newFleet(t *testing.T) *fleet {
	if os.Geteuid() != 0 {
		t.Skip("the simulated fleet needs root: unshare --uts --pid")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("the simulated fleet needs unshare(1)")
	}
	srv := sharedPostgres(t)
	f := &fleet{t: t, dsn: srv.NewDB(t), dir: t.TempDir()}
	f.bin = filepath.Join(f.dir, "bin")
	exe := testutil.Self(t)
	if err := os.Mkdir(f.bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"ledger", "adopt"} {
		if err := os.Symlink(exe, filepath.Join(f.bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// host returns a command running script (sh) as init of a new "host": its
// own UTS namespace named name, its own PID namespace and /proc; ns are
// more options of unshare(1), such as a time namespace.
func (f *fleet) host(name, script string, ns ...string) *exec.Cmd {
	boot := filepath.Join(f.dir, "boot."+name)
	if _, err := os.Stat(boot); err != nil {
		if err := os.WriteFile(boot, []byte(newBootID(f.t)+"\n"), 0o444); err != nil {
			f.t.Fatal(err)
		}
	}
	args := append([]string{"--uts", "--pid", "--fork", "--mount-proc"}, ns...)
	c := exec.Command("unshare", append(args, "sh", "-c", "echo "+name+" >/proc/sys/kernel/hostname || exit 99\n"+
		"mount --bind "+boot+" /proc/sys/kernel/random/boot_id || exit 98\n"+script)...)
	c.Dir = f.dir
	c.Env = append(os.Environ(),
		"PATH="+f.bin+":"+os.Getenv("PATH"),
		"TETHER_LEDGER="+f.dsn,
		"HOME="+f.dir,
		"OUT="+f.dir,
		"LEASE="+fleetLease.String(),
	)
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return c
}

// start starts host name running script, with env added to its
// environment, and returns it and what it says (stdout and stderr, logged
// if the test fails). The host is killed and waited for when the test
// ends.
func (f *fleet) start(name, script string, env ...string) (*exec.Cmd, *bytes.Buffer) {
	f.t.Helper()
	c := f.host(name, script)
	c.Env = append(c.Env, env...)
	said := new(bytes.Buffer)
	c.Stdout, c.Stderr = said, said
	if err := c.Start(); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() {
		c.Process.Kill()
		c.Wait()
		if f.t.Failed() && said.Len() > 0 {
			f.t.Logf("%s said:\n%s", name, said.Bytes())
		}
	})
	return c, said
}

// newBootID returns a random id in boot_id's form (a version 4 UUID).
func newBootID(t *testing.T) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// on runs script on a fresh host and returns its stdout, trimmed, and its
// exit code; stderr goes into the test's log. (A claim must not be the
// host's init, exec'd: its caller, the owner, would be PID 0.)
func (f *fleet) on(name, script string) (string, int) {
	f.t.Helper()
	c := f.host(name, script)
	var out, stderr bytes.Buffer
	c.Stdout, c.Stderr = &out, &stderr
	err := c.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		f.t.Fatal(err)
	}
	if stderr.Len() > 0 {
		f.t.Logf("%s: %s: stderr: %s", name, script, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(out.String()), code
}

// status is the status of execution id as host name sees it.
func (f *fleet) status(name, id string) string {
	f.t.Helper()
	out, code := f.on(name, "exec ledger show "+id+" --field status")
	if code != 0 {
		f.t.Fatalf("%s: ledger show %s --field status: exit %d", name, id, code)
	}
	return out
}

// TestLedgerPostgresFleetOnce: 4 hosts × 8 loops of `ledger run --instant`
// over the same slots, all at once: every slot runs exactly once.
func TestLedgerPostgresFleetOnce(t *testing.T) {
	t.Parallel()
	f := newFleet(t)
	var slots []string
	for s := 1; s <= fleetSlots; s++ {
		slots = append(slots, strconv.Itoa(s))
	}
	// Each loop goes through every slot; a run the ledger refuses (125:
	// the instant is taken) is fine, any other failure is noted.
	loop := `for s in ` + strings.Join(slots, " ") + `; do
	ledger run slots --instant $((1700000000 + s)) --lease $LEASE --grace 500ms -- sh -c 'uname -n >>"$1"' sh "$OUT/slot.$s"
	rc=$?
	[ $rc = 0 ] || [ $rc = 125 ] || echo "$(uname -n) slot $s: exit $rc" >>"$OUT/errors"
done`
	script := "for l in $(seq " + strconv.Itoa(fleetLoops) + "); do (\n" + loop + "\n) & done; wait"
	var hosts []*exec.Cmd
	for h := 1; h <= fleetHosts; h++ {
		c := f.host(fmt.Sprintf("host%d", h), script)
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if t.Failed() && out.Len() > 0 {
				t.Logf("host%d said:\n%s", h, out.Bytes())
			}
		})
		hosts = append(hosts, c)
	}
	for i, c := range hosts {
		if err := c.Wait(); err != nil {
			t.Errorf("host%d: %v", i+1, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(f.dir, "errors")); err == nil {
		t.Errorf("runs failed other than by refusal:\n%s", b)
	}

	ranOn := map[string]int{}
	for _, s := range slots {
		b, err := os.ReadFile(filepath.Join(f.dir, "slot."+s))
		if err != nil {
			t.Errorf("slot %s: never ran (%v); want exactly once", s, err)
			continue
		}
		lines := strings.Fields(string(b))
		if len(lines) != 1 {
			t.Errorf("slot %s ran on %v; want exactly once", s, lines)
			continue
		}
		ranOn[lines[0]]++
	}
	t.Logf("slots run per host: %v", ranOn)

	out, code := f.on("auditor", "exec ledger list --job slots --field status")
	if code != 0 {
		t.Fatalf("ledger list --job slots: exit %d", code)
	}
	statuses := strings.Fields(out)
	if len(statuses) != fleetSlots || slices.ContainsFunc(statuses, func(s string) bool { return s != "completed" }) {
		t.Errorf("ledger list --job slots --field status = %v; want %d × completed", statuses, fleetSlots)
	}
}

// TestLedgerPostgresFleetHostDies: a host is SIGKILLed whole (its PID
// namespace's init) while it runs a job and holds a bare claim. While its
// leases are renewed, and right after it dies, another host's recover
// leaves its executions alone and claim --exclusive is refused; once the
// leases have expired, recover marks the run unknown and the claim
// abandoned, and claim --exclusive proceeds.
func TestLedgerPostgresFleetHostDies(t *testing.T) {
	t.Parallel()
	f := newFleet(t)

	doomed, _ := f.start("doomed", `
ledger run crashjob --exclusive --lease $LEASE --grace 500ms -- sh -c 'echo $TETHER_EXECUTION >"$OUT/run.id"; exec sleep 3600' &
# renew the bare claim's lease, as a split claim/start/finish job would;
# when each call began and ended goes to beats (see leaseLapse)
s=$(date +%s%N)
id=$(ledger claim crashclaim --owner $$ --lease $LEASE) || exit 1
echo "$s $(date +%s%N)" >>"$OUT/beats"
echo $id >"$OUT/claim.id"
while :; do
	s=$(date +%s%N)
	ledger beat $id || break
	echo "$s $(date +%s%N)" >>"$OUT/beats"
	sleep 0.3
done
echo "$s $(date +%s%N) lost" >>"$OUT/beats"
echo "beat $id stopped" >&2
sleep 3600`)
	runID := testutil.WaitContent(t, filepath.Join(f.dir, "run.id"), fleetLimit)
	claimID := testutil.WaitContent(t, filepath.Join(f.dir, "claim.id"), fleetLimit)

	untouched := func(when string) {
		t.Helper()
		if got := f.status("survivor", runID); got != "running" {
			t.Errorf("%s: status of the dead host's run = %q; want running", when, got)
		}
		if got := f.status("survivor", claimID); got != "claimed" {
			// Judged rightly if its host left its lease unrenewed for
			// longer than the lease: a machine so loaded that one
			// recover took 9 s did, beside the race and normal-user
			// suites.
			if lapse := leaseLapse(t, filepath.Join(f.dir, "beats")); lapse > fleetLease {
				t.Logf("%s: the dead host's claim is %s, after its host renewed it %v apart (lease %v): not judged", when, got, lapse, fleetLease)
			} else {
				t.Errorf("%s: status of the dead host's claim = %q, its lease renewed at most %v apart; want claimed", when, got, lapse)
			}
		}
	}

	// Alive, for longer than a lease: nothing is judged from elsewhere.
	aliveUntil := time.Now().Add(fleetLease + fleetLease/2)
	for time.Now().Before(aliveUntil) {
		if _, code := f.on("survivor", "exec ledger recover"); code != 0 {
			t.Fatalf("survivor: ledger recover: exit %d", code)
		}
	}
	untouched("host alive, after a lease of recovers elsewhere")
	if _, code := f.on("survivor", "ledger claim crashjob --exclusive"); code != 1 {
		t.Errorf("host alive: ledger claim crashjob --exclusive: exit %d; want 1 (refused)", code)
	}

	// Kill the whole host: its namespace's init takes every process of it.
	init := nsInit(t, doomed.Process.Pid)
	if err := syscall.Kill(init, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	doomed.Wait()

	// Right after: the leases still run, so nothing is judged. This holds
	// only while less than a lease minus the renewal interval has passed;
	// on a machine too loaded to ask within a quarter lease the check
	// says so instead of guessing.
	if _, code := f.on("survivor", "exec ledger recover"); code != 0 {
		t.Fatalf("survivor: ledger recover: exit %d", code)
	}
	if since := time.Since(killed); since < fleetLease/4 {
		untouched("right after the kill")
	} else {
		t.Logf("the recover right after the kill ended %v after it (more than a quarter lease): not judged", since)
	}

	// After the lease: another host's recover judges the dead host's
	// executions as it would a dead local owner's.
	deadline := killed.Add(fleetLimit)
	for {
		if _, code := f.on("survivor", "exec ledger recover"); code != 0 {
			t.Fatalf("survivor: ledger recover: exit %d", code)
		}
		if f.status("survivor", runID) != "running" && f.status("survivor", claimID) != "claimed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v after the kill, recover has not judged %s and %s", fleetLimit, runID, claimID)
		}
		time.Sleep(100 * time.Millisecond)
	}
	judged := time.Since(killed)
	if got := f.status("survivor", runID); got != "unknown" {
		t.Errorf("after the lease: status of the dead host's run = %q; want unknown", got)
	}
	if got := f.status("survivor", claimID); got != "abandoned" {
		t.Errorf("after the lease: status of the dead host's claim = %q; want abandoned", got)
	}
	if _, code := f.on("survivor", "ledger claim crashjob --exclusive"); code != 0 {
		t.Errorf("after recovery: ledger claim crashjob --exclusive: exit %d; want 0", code)
	}
	t.Logf("judged %v after the kill (lease %v)", judged, fleetLease)
}

// leaseLapse returns, from beats (a line "BEGAN ENDED" in Unix
// nanoseconds per call that took or renewed a lease, "BEGAN ENDED lost"
// for the call that failed), the longest the lease may have gone
// unrenewed up to now: a renewal happened between its call's BEGAN and
// ENDED, so the next one came at most next ENDED - this BEGAN later.
func leaseLapse(t *testing.T, beats string) time.Duration {
	t.Helper()
	b, err := os.ReadFile(beats)
	if err != nil {
		t.Fatal(err)
	}
	var lapse, began int64
	lost := false
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var s, e int64
		var what string
		if n, _ := fmt.Sscan(line, &s, &e, &what); n < 2 {
			t.Fatalf("%s: line %q; want BEGAN ENDED", beats, line)
		}
		if began != 0 {
			lapse = max(lapse, e-began)
		}
		began, lost = s, what == "lost"
	}
	if !lost {
		lapse = max(lapse, time.Now().UnixNano()-began)
	}
	return time.Duration(lapse)
}

// nsInit returns the PID of the only child of unshare (pid): the init of
// the PID namespace it made.
func nsInit(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		t.Fatal(err)
	}
	kids := strings.Fields(string(b))
	if len(kids) != 1 {
		t.Fatalf("unshare %d has children %v; want one, its namespace's init", pid, kids)
	}
	n, err := strconv.Atoi(kids[0])
	if err != nil {
		t.Fatal(err)
	}
	return n
}
