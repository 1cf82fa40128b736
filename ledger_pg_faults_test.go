//go:build linux

package tether_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/proc"

	"github.com/tether-sh/tether/internal/pgtest"
	"github.com/tether-sh/tether/internal/testutil"
)

// The fleet under faults (issue #21): hosts as in ledger_pg_fleet_test.go
// (their own PID and UTS namespaces and boot ids), each reaching its own
// PostgreSQL server through a relay of its own that the test freezes (a
// partition: connections hang, others' do not), slows or cuts, while the
// server itself is crashed and restarted. Every host runs every slot of one
// job with --exclusive --instant. The payloads leave evidence the verdicts
// read: each writes its execution id and start/end times, and holds a
// non-blocking flock for its whole life, so that a second payload alive at
// the same time finds it taken (and says so) whatever the clocks. The
// payloads are bash, whose evidence needs no child process: a stop's TERM
// goes to the whole group, and a "$(date)" it killed once left a start line
// without its time (CI, under -race). Its work done, a payload ignores TERM
// while it writes its end and exits 0: a TERM just then (a lease lost at
// that instant) must not make a payload that wrote .done exit 143 from its
// trap; its exit 0 as it is stopped is recorded completed.

// relayedDB makes a fresh database on the shared server and a relay to
// it, and returns the relay and the database's DSNs through the relay and
// direct.
func relayedDB(t *testing.T) (r *relay, viaRelay, direct string) {
	srv := sharedPostgres(t)
	db, err := srv.CreateDBName()
	if err != nil {
		t.Fatal(err)
	}
	rdir, err := os.MkdirTemp("", "relay-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(rdir, 0o755)
	t.Cleanup(func() { os.RemoveAll(rdir) })
	r = newRelay(t, rdir, filepath.Join(srv.SocketDir, ".s.PGSQL.5432"))
	return r, "postgres:///" + db + "?host=" + rdir + "&user=" + pgtest.Superuser,
		"postgres:///" + db + "?host=" + srv.SocketDir + "&user=" + pgtest.Superuser
}

// relay forwards connections from a unix socket (a host's "network") to
// the server's socket, and can freeze, delay or cut them.
type relay struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	cond   *sync.Cond
	frozen bool
	delay  time.Duration
	conns  map[net.Conn]struct{}
	closed bool
}

// newRelay listens in dir (as PostgreSQL's socket, so that a DSN's host is
// dir) and forwards to the server socket target.
func newRelay(t *testing.T, dir, target string) *relay {
	ln, err := net.Listen("unix", filepath.Join(dir, ".s.PGSQL.5432"))
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	r.cond = sync.NewCond(&r.mu)
	go r.serve()
	t.Cleanup(r.close)
	return r
}

func (r *relay) serve() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		go r.forward(c)
	}
}

func (r *relay) forward(client net.Conn) {
	server, err := net.Dial("unix", r.target)
	if err != nil {
		client.Close()
		return
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		client.Close()
		server.Close()
		return
	}
	r.conns[client], r.conns[server] = struct{}{}, struct{}{}
	r.mu.Unlock()
	done := func() {
		client.Close()
		server.Close()
		r.mu.Lock()
		delete(r.conns, client)
		delete(r.conns, server)
		r.mu.Unlock()
	}
	go func() { r.pump(server, client); done() }()
	r.pump(client, server)
	done()
}

// pump copies from src to dst, a chunk at a time, each held while the
// relay is frozen and delayed by its delay.
func (r *relay) pump(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			r.mu.Lock()
			for r.frozen && !r.closed {
				r.cond.Wait()
			}
			d, closed := r.delay, r.closed
			r.mu.Unlock()
			if closed {
				return
			}
			if d > 0 {
				time.Sleep(d)
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// freeze holds every byte in both directions (a partition) until thaw.
func (r *relay) freeze() { r.mu.Lock(); r.frozen = true; r.mu.Unlock() }

func (r *relay) thaw() { r.mu.Lock(); r.frozen = false; r.cond.Broadcast(); r.mu.Unlock() }

func (r *relay) setDelay(d time.Duration) { r.mu.Lock(); r.delay = d; r.mu.Unlock() }

// cut closes every connection through the relay (a reset).
func (r *relay) cut() {
	r.mu.Lock()
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
}

func (r *relay) close() {
	r.ln.Close()
	r.mu.Lock()
	r.closed = true
	r.cond.Broadcast()
	r.mu.Unlock()
	r.cut()
}

// faultHosts and faultSlots size the test: 3 hosts over 200 slots (30
// with -short).
const faultHosts = 3

func faultSlots() int {
	if testing.Short() {
		return 30
	}
	return 200
}

// faultPayload is every slot's payload (bash, $1 the base of its evidence
// files): it holds a flock while it lives (a second payload alive at once
// finds it taken and says so, whatever the clocks), writes its execution
// id, fencing token and start time, works a little (one in eight longer
// than a lease), then writes to the fenced resource (a row that takes a
// write only with a token greater than the last it took; psql -q, so that
// a refused write prints nothing, not "INSERT 0 0") and says whether its
// write was accepted. Its work done, it ignores TERM while it writes its
// end and exits 0: a TERM just then (a lease lost at that instant) must
// not make a payload that wrote .done exit 143 from its trap.
const faultPayload = `exec 9>>"$OUT/alive.lock"
flock -n 9 || echo "$1 $TETHER_EXECUTION: flock taken: another payload alive" >>"$OUT/overlap"
trap 'echo $EPOCHREALTIME >>"$1.end"; exit 143' TERM
echo "$TETHER_EXECUTION $HOSTNAME $TETHER_FENCE_TOKEN $EPOCHREALTIME" >>"$1.ran"
sleep $(( $$ % 8 == 0 ? 3 : 0 )).$(( $$ % 3 + 1 )) & wait
r=$(psql -X -qtA -v ON_ERROR_STOP=1 "$RESOURCE" -c "WITH u AS (UPDATE fenced SET fence = $TETHER_FENCE_TOKEN WHERE k = 'r' AND fence < $TETHER_FENCE_TOKEN RETURNING fence) INSERT INTO accepted (token, execution) SELECT fence, '$TETHER_EXECUTION' FROM u RETURNING token") &&
	if [ -n "$r" ]; then echo "accepted $TETHER_FENCE_TOKEN $r $EPOCHREALTIME"; else echo "refused $TETHER_FENCE_TOKEN - $EPOCHREALTIME"; fi >>"$1.write"
trap "" TERM
echo "$EPOCHREALTIME" >>"$1.end"
echo "$TETHER_EXECUTION" >>"$1.done"`

// TestLedgerPostgresFleetFaults (#21, #45): every host runs every slot of
// one --exclusive --instant job under a 2s lease, each through a relay of
// its own, while at random moments a host is partitioned (its relay
// frozen), slowed or reset; the server is crashed (SIGQUIT: immediate
// shutdown) or killed (SIGKILL of every process of it) and restarted; a
// host (its loop, runner and payload) or a runner alone (its payload runs
// on) is frozen with SIGSTOP for 1 to 3 leases; and the server's wall
// clock jumps forward by 2 to 4 leases and back (libfaketime: every lease
// it judges jumps with it). One host lives in a time namespace whose boot
// and monotonic clocks are 10 leases ahead of the others'. The payloads
// write to a fenced resource with their token.
//
// Verdicts: the resource never accepted a token lower than one it had
// accepted, and refused a write only for a greater token it had taken;
// every execution has a token of its own, the one its payload saw; no
// execution's payload ran twice and no slot completed twice; two payloads
// alive at once only where a pause or a forward jump of the server's clock
// let a lease run out under a live runner (no lease can cover those: only
// the token, which then refused the older one's write if the newer had
// written); no record of a payload that ran is lost, and every record is
// honest.
func TestLedgerPostgresFleetFaults(t *testing.T) {
	t.Parallel()
	f := newFleet(t)
	opts := pgtest.Options{Killable: true, FakeClock: true}
	srv, err := pgtest.StartMainWith(opts)
	if errors.Is(err, pgtest.ErrNoFaketime) && !pgtest.CI() {
		t.Logf("%v: the server's clock will not jump", err)
		opts.FakeClock = false
		srv, err = pgtest.StartMainWith(opts)
	}
	if err != nil {
		pgtest.Unavailable(t, err)
	}
	t.Cleanup(srv.Stop)
	if _, err := exec.LookPath("psql"); err != nil {
		t.Skip("no psql for the fenced resource")
	}
	db, err := srv.CreateDBName()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Psql(db, `CREATE TABLE fenced (k text PRIMARY KEY, fence bigint NOT NULL);
		INSERT INTO fenced VALUES ('r', 0);
		CREATE TABLE accepted (n bigserial PRIMARY KEY, token bigint NOT NULL, execution text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(srv.SocketDir, ".s.PGSQL.5432")
	runs := filepath.Join(f.dir, "runs")
	if err := os.Mkdir(runs, 0o777); err != nil {
		t.Fatal(err)
	}
	slots := faultSlots()
	var relays []*relay
	var hosts []*exec.Cmd
	var said []*bytes.Buffer
	// A run's statements give up after 1.5s, its connection after 1s: a
	// lease of 2s is renewed every 0.4s and given up 0.8s before it runs
	// out (grace 0.3s + 0.5s).
	script := `i=0
while [ $i -lt ` + strconv.Itoa(slots) + ` ]; do
	i=$((i + 1))
	for try in 1 2 3 4 5 6 7 8; do
		ledger run fj --exclusive --instant $((1700000000 + i)) --lease 2s --grace 300ms -- bash -c "$PAYLOAD" bash "$RUNS/$i.$(uname -n).$try" 2>"$OUT/err.$(uname -n)"
		cat "$OUT/err.$(uname -n)" >&2
		grep -q 'exclusively\|unavailable\|outcome' "$OUT/err.$(uname -n)" || break
		sleep 0.05
	done
done`
	for h := 1; h <= faultHosts; h++ {
		rdir, err := os.MkdirTemp("", "relay-")
		if err != nil {
			t.Fatal(err)
		}
		os.Chmod(rdir, 0o755)
		t.Cleanup(func() { os.RemoveAll(rdir) })
		r := newRelay(t, rdir, target)
		relays = append(relays, r)
		name := fmt.Sprintf("fh%d", h)
		var ns []string
		if h == faultHosts && haveTimeNS(t) {
			// Ahead by 10 leases on the clocks a runner counts its
			// lease on: nothing may compare them across hosts.
			ns = []string{"--time", "--boottime", "20", "--monotonic", "20"}
		}
		c := f.host(name, script, ns...)
		viaRelay := "postgres:///" + db + "?host=" + rdir + "&user=" + pgtest.Superuser
		c.Env = append(c.Env, "TETHER_LEDGER="+viaRelay+"&connect_timeout=1&statement_timeout=1500",
			"RESOURCE="+viaRelay+"&connect_timeout=2", "RUNS="+runs, "PAYLOAD="+faultPayload)
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		said = append(said, &out)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill() })
		hosts = append(hosts, c)
	}

	// The faults, one at a time at random moments until every host is
	// done. A pause or a forward jump of the server's clock opens a
	// window in which two payloads may be alive at once.
	done := make(chan struct{})
	faults := map[string]int{}
	var windows []window
	var faultsDone sync.WaitGroup
	faultsDone.Add(1)
	go func() {
		defer faultsDone.Done()
		rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 21))
		hold := func(d time.Duration) {
			select {
			case <-done:
			case <-time.After(d):
			}
		}
		var ahead time.Duration // the server's clock
		var bag []string
		pauses := 0
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Duration(200+rng.IntN(800)) * time.Millisecond):
			}
			r := relays[rng.IntN(len(relays))]
			if len(bag) == 0 {
				bag = slices.Clone(faultBag)
				rng.Shuffle(len(bag), func(i, j int) { bag[i], bag[j] = bag[j], bag[i] })
			}
			kind := bag[0]
			bag = bag[1:]
			switch kind {
			case "freeze": // a partition of one host, for up to two leases
				r.freeze()
				faults["freeze"]++
				hold(time.Duration(300+rng.IntN(3700)) * time.Millisecond)
				r.thaw()
			case "delay": // a slow link
				r.setDelay(time.Duration(20+rng.IntN(200)) * time.Millisecond)
				faults["delay"]++
				hold(time.Duration(500+rng.IntN(2000)) * time.Millisecond)
				r.setDelay(0)
			case "cut": // a reset of every connection of one host
				r.cut()
				faults["cut"]++
			case "pause": // a host, or a runner alone (in turn), frozen for 1 to 3 leases
				// A host whose payload is alive, if there is one: its
				// pause is the one that can let two payloads act.
				hk := rng.IntN(len(hosts))
				for _, k := range rng.Perm(len(hosts)) {
					if payloadAlive(hosts[k].Process.Pid) {
						hk = k
						break
					}
				}
				tree, what := descendants(hosts[hk].Process.Pid), "pause host"
				if pauses%2 == 1 {
					tree, what = runners(tree), "pause runner"
				}
				if len(tree) == 0 {
					continue
				}
				pauses++
				faults[what]++
				w := window{kind: what, host: fmt.Sprintf("fh%d", hk+1), from: now()}
				for _, pid := range tree {
					syscall.Kill(pid, syscall.SIGSTOP)
				}
				hold(time.Duration(2000+rng.IntN(4000)) * time.Millisecond)
				for _, pid := range tree {
					syscall.Kill(pid, syscall.SIGCONT)
				}
				w.to = now()
				windows = append(windows, w)
			case "clock": // the server's wall clock jumps, forward or back
				if !opts.FakeClock {
					continue
				}
				// Forward from 0 or below; else back, to 0 or below it.
				prev := ahead
				if ahead <= 0 {
					ahead = time.Duration(4+rng.IntN(5)) * time.Second
				} else {
					ahead = time.Duration(rng.IntN(2)) * -3 * time.Second
				}
				if err := srv.SetClock(ahead); err != nil {
					t.Errorf("server clock: %v", err)
					return
				}
				if ahead > prev {
					faults["clock forward"]++
					// Within a second every backend has it.
					windows = append(windows, window{kind: "clock forward", from: now(), to: now() + 1})
				} else {
					faults["clock back"]++
				}
			case "crash": // the server crashes and comes back
				if faults["crash"] >= 3 {
					continue
				}
				faults["crash"]++
				if err := srv.Crash(); err != nil {
					t.Errorf("server restart: %v", err)
					return
				}
			case "kill": // every process of the server killed with SIGKILL
				if faults["kill -9"] >= 3 {
					continue
				}
				faults["kill -9"]++
				if err := srv.Kill(); err != nil {
					t.Errorf("server restart after kill -9: %v", err)
					return
				}
			}
		}
	}()
	for i, c := range hosts {
		if err := c.Wait(); err != nil {
			t.Errorf("fh%d: %v", i+1, err)
		}
	}
	close(done)
	faultsDone.Wait()
	for _, r := range relays {
		r.thaw()
		r.setDelay(0)
	}
	if opts.FakeClock {
		srv.SetClock(0)
	}
	t.Logf("faults: %v", faults)
	if !testing.Short() {
		kinds := []string{"freeze", "delay", "cut", "pause host", "pause runner", "crash", "kill -9"}
		if opts.FakeClock {
			kinds = append(kinds, "clock forward", "clock back")
		}
		for _, k := range kinds {
			if faults[k] == 0 {
				t.Errorf("no fault of kind %q in %d slots: the fleet was not tested under it", k, slots)
			}
		}
	}
	if t.Failed() {
		for i, b := range said {
			t.Logf("fh%d said:\n%s", i+1, b.Bytes())
		}
		return
	}

	// Every lease has run out by now (2s after the last host ended, with
	// the server's clock back where it was, or behind by as much as it
	// was last ahead): an auditor's recover judges whatever was left open.
	direct := "postgres:///" + db + "?host=" + srv.SocketDir + "&user=" + pgtest.Superuser
	time.Sleep(2500*time.Millisecond + 3*time.Second)
	f.audit(direct, "exec ledger recover >/dev/null")
	records := map[string][]string{} // id → status, instant, late status, error, token
	for _, line := range strings.Split(strings.TrimSpace(f.audit(direct, `exec ledger list --job fj --json`)), "\n") {
		if line == "" {
			continue
		}
		id, status, instant, late := jsonField(line, "id"), jsonField(line, "status"), jsonField(line, "instant"), jsonField(line, "late")
		records[id] = []string{status, instant, late, jsonField(line, "error"), jsonField(line, "token")}
	}
	accepted, err := srv.Psql(db, `SELECT token, execution FROM accepted ORDER BY n`)
	if err != nil {
		t.Fatal(err)
	}
	verdict(t, runs, records, slots, windows)
	fencedVerdict(t, runs, records, accepted)
	if b, err := os.ReadFile(filepath.Join(f.dir, "overlap")); err == nil {
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			// The holder of the lock is not known: any host's pause, or a
			// jump, excuses it (the spans' check in verdict knows both).
			b, _ := os.ReadFile(strings.Fields(l)[0] + ".ran")
			fs := strings.Fields(string(b))
			if len(fs) == 0 {
				t.Errorf("%s: the payload found the lock taken and wrote no start", l)
				continue
			}
			start := readTimes(fs[len(fs)-1] + "\n")
			if len(start) == 0 || !excused(windows, "", start[0]) {
				t.Errorf("two payloads alive at once, outside any pause or forward jump of the server's clock: %s", l)
			}
		}
	}
}

// faultBag holds every kind of fault the fleet test injects, each as
// often as it is drawn: the test draws them from a shuffled bag, refilled
// when empty, so that every kind comes within 20 faults (a crash and a
// kill at most 3 times each).
var faultBag = []string{
	"freeze", "freeze", "freeze", "freeze", "freeze",
	"delay", "delay", "delay",
	"cut", "cut", "cut", "cut",
	"pause", "pause", "pause", "pause",
	"clock", "clock",
	"crash", "kill",
}

// haveTimeNS reports whether the kernel has time namespaces (Linux 5.6,
// CONFIG_TIME_NS), and says so in the log when it has not.
func haveTimeNS(t *testing.T) bool {
	if _, err := os.Stat("/proc/self/timens_offsets"); err != nil {
		t.Logf("no time namespaces (%v): every host's clocks agree", err)
		return false
	}
	return true
}

// window is a time (seconds since the epoch, as bash's $EPOCHREALTIME)
// in which a fault let a lease run out under a live runner: a pause of
// it, or a forward jump of the server's clock.
type window struct {
	kind     string
	host     string // the host paused; "" for a jump, which any host's runner may meet
	from, to float64
}

// windowTail is how long after a window a payload of the past may still be
// alive: the runner, continued, renews (a connection of up to 1s and a
// statement of up to 1.5s), finds itself replaced, stops its payload
// (grace 0.3s) and waits for it, on a loaded machine.
const windowTail = 6

// excused reports whether a payload that started at start, while one of
// host was alive, started in or just after a window: a pause of host, or a
// forward jump of the server's clock. (host "": a pause of any host.)
func excused(windows []window, host string, start float64) bool {
	for _, w := range windows {
		if (host == "" || w.host == "" || w.host == host) && start >= w.from && start <= w.to+windowTail {
			return true
		}
	}
	return false
}

func now() float64 { return float64(time.Now().UnixNano()) / 1e9 }

// fencedVerdict checks the fencing tokens: each execution's own, the one
// its payload saw, and the resource's answers to the payloads' writes.
func fencedVerdict(t *testing.T, runs string, records map[string][]string, accepted string) {
	t.Helper()
	owner := map[string]string{} // token → execution
	for id, rec := range records {
		tok := rec[4]
		if tok == "null" && rec[0] == "failed" && strings.Contains(rec[3], "the tool gave up and its command never ran") {
			// Written in the place of a claim whose answer was lost and
			// which never committed: no claim, no token.
			continue
		}
		if n, err := strconv.ParseInt(tok, 10, 64); err != nil || n <= 0 {
			t.Errorf("execution %s has token %q; want a positive integer: %v", id, tok, rec)
			continue
		}
		if other, dup := owner[tok]; dup {
			t.Errorf("executions %s and %s have the same token %s", other, id, tok)
		}
		owner[tok] = id
	}
	files, _ := filepath.Glob(filepath.Join(runs, "*.ran"))
	for _, file := range files {
		b, _ := os.ReadFile(file)
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			fs := strings.Fields(line)
			if len(fs) != 4 {
				t.Errorf("%s: %q; want execution, host, token, time", file, line)
				continue
			}
			if rec, ok := records[fs[0]]; ok && rec[4] != fs[2] {
				t.Errorf("execution %s's payload saw TETHER_FENCE_TOKEN=%s; its record says %s", fs[0], fs[2], rec[4])
			}
		}
	}
	// The resource took tokens in increasing order, each from the
	// execution that holds it.
	var last int64
	took := map[int64]bool{}
	for _, l := range strings.Split(strings.TrimSpace(accepted), "\n") {
		fs := strings.Split(l, "|")
		if len(fs) != 2 {
			continue
		}
		tok, _ := strconv.ParseInt(fs[0], 10, 64)
		if tok <= last {
			t.Errorf("the resource accepted token %d after %d", tok, last)
		}
		if owner[fs[0]] != fs[1] {
			t.Errorf("the resource accepted token %s from execution %s; the token is %s's", fs[0], fs[1], owner[fs[0]])
		}
		last, took[tok] = tok, true
	}
	// A payload told its write was refused had a token below one the
	// resource took; one told accepted is in the resource.
	refused := 0
	writes, _ := filepath.Glob(filepath.Join(runs, "*.write"))
	for _, file := range writes {
		b, _ := os.ReadFile(file)
		fs := strings.Fields(string(b))
		if len(fs) != 4 {
			t.Errorf("%s: %q; want one answer", file, b)
			continue
		}
		tok, _ := strconv.ParseInt(fs[1], 10, 64)
		switch {
		case fs[0] == "accepted" && fs[2] != fs[1]:
			t.Errorf("%s: the payload wrote with token %s and the resource answered %q", file, fs[1], fs[2])
		case fs[0] == "accepted" && !took[tok]:
			t.Errorf("%s: the payload was told its write with token %d was accepted; the resource has no such write", file, tok)
		case fs[0] == "refused" && last <= tok:
			t.Errorf("%s: the write with token %d was refused, but the resource never took a greater token (last %d)", file, tok, last)
		case fs[0] == "refused":
			refused++
		}
	}
	t.Logf("fenced resource: %d writes accepted, %d stale writes refused", len(took), refused)
}

// audit runs script on a host of its own, "auditor", against the store
// dsn (one direct to the server, past every relay), and returns what it
// printed; the test fails if it fails.
func (f *fleet) audit(dsn, script string) string {
	f.t.Helper()
	c := f.host("auditor", script)
	c.Env = append(c.Env, "TETHER_LEDGER="+dsn)
	var out, stderr bytes.Buffer
	c.Stdout, c.Stderr = &out, &stderr
	if err := c.Run(); err != nil {
		f.t.Fatalf("auditor: %s: %v: %s", script, err, stderr.String())
	}
	return out.String()
}

// verdict checks the evidence the payloads left against the records.
func verdict(t *testing.T, runs string, records map[string][]string, slots int, windows []window) {
	t.Helper()
	ran := map[string]string{}    // execution id → the file that says it ran
	completed := map[string]int{} // slot → payloads that ran to their end
	doneIDs := map[string]bool{}
	type span struct {
		start, end float64
		host       string
	}
	var spans []span
	files, _ := filepath.Glob(filepath.Join(runs, "*.ran"))
	for _, file := range files {
		b, _ := os.ReadFile(file)
		var start []float64
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			fields := strings.Fields(line)
			if len(fields) == 0 {
				continue // a payload stopped before it wrote its line
			}
			id := fields[0]
			if prev, dup := ran[id]; dup {
				t.Errorf("execution %s's payload ran twice: %s and %s", id, prev, file)
			}
			ran[id] = file
			start = append(start, readTimes(fields[len(fields)-1]+"\n")...)
		}
		base := strings.TrimSuffix(file, ".ran")
		slot := strings.SplitN(filepath.Base(base), ".", 2)[0]
		end := readTimes(base + ".end")
		if len(start) != 1 || len(end) != 1 {
			t.Errorf("%s: start %v, end %v; want one of each (the payload ended without a word?)", base, start, end)
			continue
		}
		// base is $RUNS/SLOT.HOST.TRY
		spans = append(spans, span{start[0], end[0], strings.Split(filepath.Base(base), ".")[1]})
		if b, err := os.ReadFile(base + ".done"); err == nil {
			completed[slot]++
			id := strings.TrimSpace(string(b))
			doneIDs[id] = true
			rec, ok := records[id]
			switch {
			case !ok:
				t.Errorf("execution %s ran to its end (%s) and has no record: lost", id, base)
			case rec[0] != "completed" && !strings.Contains(rec[2], "completed"):
				t.Errorf("execution %s ran to its end and exited 0 (%s), recorded %v; want completed (or late completed)", id, base, rec)
			}
		}
	}
	for slot, n := range completed {
		if n > 1 {
			t.Errorf("slot %s: %d payloads ran to their end; want at most one", slot, n)
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	// The payload alive longest so far, and its host: the one a later
	// start overlaps, whose lease only its host's pause or a jump could
	// let run out.
	overlaps, end, host := 0, 0.0, ""
	for i := range spans {
		if spans[i].start < end {
			overlaps++
			if !excused(windows, host, spans[i].start) {
				t.Errorf("payloads alive at once outside any pause of %s or forward jump of the server's clock: %s's ran until %.3f, %s's started at %.3f", host, host, end, spans[i].host, spans[i].start)
			}
		}
		if spans[i].end > end {
			end, host = spans[i].end, spans[i].host
		}
	}
	statuses := map[string]int{}
	for id, rec := range records {
		statuses[rec[0]]++
		switch rec[0] {
		case "completed":
			if !doneIDs[id] {
				t.Errorf("execution %s is completed, but its payload never ran to its end", id)
			}
		case "claimed", "running":
			t.Errorf("execution %s is still %s after every lease ran out and recover", id, rec[0])
		}
		if _, ok := ran[id]; !ok && rec[0] == "unknown" && rec[2] == "" {
			// Claimed and started, never ran (the claim's answer was lost
			// and the tool gave up) must have been settled, not left. A
			// late result is a runner's own word that it started the
			// payload and saw it end: one stopped for a lease it could
			// not renew before its first command wrote the marker.
			t.Errorf("execution %s is unknown, but its payload never ran (a claim that outlived its tool?): %v", id, rec)
		}
	}
	completedRecords := map[string]int{} // slot → executions recorded completed
	for _, rec := range records {
		if rec[0] == "completed" {
			completedRecords[rec[1]]++
		}
	}
	for slot, n := range completedRecords {
		if n > 1 {
			t.Errorf("slot %s: %d executions recorded completed; want at most one", slot, n)
		}
	}
	for id, file := range ran {
		if _, ok := records[id]; !ok {
			t.Errorf("execution %s ran (%s) and has no record: lost", id, file)
		}
	}
	n := 0
	for range completed {
		n++
	}
	t.Logf("%d slots, %d payloads ran, %d slots completed, %d payloads started while another was alive; records by status %v", slots, len(ran), n, overlaps, statuses)
	if n < slots/4 {
		t.Errorf("only %d of %d slots completed: the faults left the fleet too little to judge", n, slots)
	}
}

// readTimes reads the seconds.nanoseconds lines of path (or of the text
// itself, when it ends in a newline).
func readTimes(path string) []float64 {
	b := []byte(path)
	if !strings.HasSuffix(path, "\n") {
		var err error
		if b, err = os.ReadFile(path); err != nil {
			return nil
		}
	}
	var ts []float64
	for _, l := range strings.Fields(string(b)) {
		if v, err := strconv.ParseFloat(l, 64); err == nil {
			ts = append(ts, v)
		}
	}
	return ts
}

// jsonField is a crude reader of one top-level field of a JSON line:
// enough for the record fields the verdicts read (strings or null, or an
// object's text for "late").
func jsonField(line, key string) string {
	i := strings.Index(line, `"`+key+`":`)
	if i < 0 {
		return ""
	}
	rest := line[i+len(key)+3:]
	switch {
	case strings.HasPrefix(rest, `"`):
		j := strings.Index(rest[1:], `"`)
		return rest[1 : j+1]
	case strings.HasPrefix(rest, "{"):
		j := strings.Index(rest, "}")
		return rest[:j+1]
	}
	j := strings.IndexAny(rest, ",}")
	return rest[:j]
}

// waitEither waits until one of first and second holds more than white
// space and returns the contents, trimmed (first's is looked at first);
// the test fails if neither is written within limit.
func waitEither(t *testing.T, first, second string, limit time.Duration) (string, string) {
	t.Helper()
	for deadline := time.Now().Add(limit); ; time.Sleep(10 * time.Millisecond) {
		a, _ := os.ReadFile(first)
		b, _ := os.ReadFile(second)
		if a, b := strings.TrimSpace(string(a)), strings.TrimSpace(string(b)); a != "" || b != "" {
			return a, b
		}
		if time.Now().After(deadline) {
			t.Fatalf("neither %s nor %s written within %v", first, second, limit)
		}
	}
}

// startRelayed starts host name running `run` (a ledger run through the
// relay, with connect_timeout=1 and a short lease, so that a partition
// cuts it off fast) and waits until its payload has written the execution
// id to $OUT/WHO.id; run's exit status goes to $OUT/WHO.rc. A loaded
// machine can outlast connect_timeout or the lease before anything is
// cut: then ledger run says the database is unavailable and claims
// nothing, or cannot renew its lease and stops its command before the
// payload began (as it must), or is refused while the execution that
// lease held has not yet expired. Nothing was cut yet, so the host is
// started again (a second apart, at most 6 tries); any other early exit
// fails the test.
func (f *fleet) startRelayed(name, who, run, viaRelay string) (host *exec.Cmd, said *bytes.Buffer, id string) {
	f.t.Helper()
	rcFile := filepath.Join(f.dir, who+".rc")
	for try := 1; ; try++ {
		host, said = f.start(name, run+`; echo $? >"$OUT/`+who+`.rc"`, "TETHER_LEDGER="+viaRelay)
		var rc string
		id, rc = waitEither(f.t, filepath.Join(f.dir, who+".id"), rcFile, fleetLimit)
		if id != "" {
			return host, said, id
		}
		host.Wait()
		early := said.String()
		loadBound := strings.Contains(early, "database unavailable") ||
			strings.Contains(early, "its lease could not be renewed") || rc == "125"
		if try == 6 || !loadBound {
			f.t.Fatalf("host %s: ledger run = %s before its payload started (try %d): %s", name, rc, try, said)
		}
		f.t.Logf("host %s, try %d: ledger run = %s: %s", name, try, rc, strings.TrimSpace(early))
		os.Remove(rcFile)
		time.Sleep(time.Second)
	}
}

// TestLedgerPostgresPartitionFences is issue #21's first report: host A
// runs an --exclusive job and is cut off from the database (its relay
// frozen: its connections hang, everyone else's answer). A cannot renew
// its lease and stops its payload before the lease runs out; only then may
// host B's --exclusive run recover A's execution (unknown) and start. The
// payloads' flock and the times they wrote say that they never overlapped.
// Once the partition heals, A's late result is kept on its record.
func TestLedgerPostgresPartitionFences(t *testing.T) {
	t.Parallel()
	f := newFleet(t)
	r, viaRelay, direct := relayedDB(t)
	viaRelay += "&connect_timeout=1&statement_timeout=1500"
	payload := func(who string) string {
		return `flock -n -E 99 "$OUT/alive.lock" sh -c 'trap "date +%s.%N >\"$OUT/` + who + `.end\"; exit 143" TERM
			date +%s.%N >"$OUT/` + who + `.start"; echo "$TETHER_EXECUTION" >"$OUT/` + who + `.id"; sleep 60 & wait'`
	}
	a, aSaid, aID := f.startRelayed("pa", "a", `ledger run excl --exclusive --lease 3s --grace 300ms -- `+payload("a"), viaRelay)
	r.freeze()
	frozen := time.Now()

	// B tries until its exclusive claim gets through: refused (125) while
	// A's lease runs, then it recovers A and runs.
	var bCode int
	for deadline := time.Now().Add(fleetLimit); ; time.Sleep(100 * time.Millisecond) {
		c := f.host("pb", `ledger run excl --exclusive --lease 3s --grace 300ms -- `+
			`flock -n -E 99 "$OUT/alive.lock" sh -c 'date +%s.%N >"$OUT/b.start"; echo "$TETHER_EXECUTION" >"$OUT/b.id"'`)
		c.Env = append(c.Env, "TETHER_LEDGER="+direct)
		out, err := c.CombinedOutput()
		bCode = c.ProcessState.ExitCode()
		if err == nil || bCode != 125 {
			if bCode != 0 {
				t.Fatalf("host B: ledger run = %d (%v): %s; want 0, or 125 while A's lease runs", bCode, err, out)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("host B still refused %v after the partition: %s", fleetLimit, out)
		}
	}
	t.Logf("B ran %v after A was cut off", time.Since(frozen).Round(time.Millisecond))
	aEnd, bStart := readTimes(filepath.Join(f.dir, "a.end")), readTimes(filepath.Join(f.dir, "b.start"))
	if len(aEnd) != 1 || len(bStart) != 1 {
		t.Fatalf("A's payload ended at %v, B's started at %v; want A stopped (TERM) before B started", aEnd, bStart)
	}
	if aEnd[0] >= bStart[0] {
		t.Errorf("A's payload ended at %.3f, after B's started at %.3f: two runs of an --exclusive job at once", aEnd[0], bStart[0])
	}

	// The partition heals: A records its result, refused as late.
	r.thaw()
	if rc := testutil.WaitContent(t, filepath.Join(f.dir, "a.rc"), fleetLimit); rc != "3" {
		t.Errorf("host A: ledger run = %s; want 3 (its payload stopped by TERM, its result late: B took over)", rc)
	}
	a.Wait()
	rec := f.audit(direct, "exec ledger show "+aID+" --json")
	if jsonField(rec, "status") != "unknown" || !strings.Contains(jsonField(rec, "late"), `"status":"failed"`) {
		t.Errorf("A's record = %s; want unknown (recovered by B) with A's result kept as late (failed)", rec)
	}
	if !strings.Contains(aSaid.String(), "stopping its command before the lease runs out") {
		t.Errorf("host A said %q; want it to say it stopped its command before the lease ran out", aSaid.String())
	}
}

// TestLedgerPostgresLeaseLostExitZero: a run cut off from the database
// stops its payload before its lease runs out; a payload that answers the
// TERM with exit 0 (or ends on its own just then: the runner cannot tell)
// has done its work by its own word. ledger run exits 0, and the record
// must say completed, never failed: a failed record would free the slot
// for another run (the fleet under faults saw a slot run to its end twice
// that way).
func TestLedgerPostgresLeaseLostExitZero(t *testing.T) {
	t.Parallel()
	f := newFleet(t)
	r, viaRelay, direct := relayedDB(t)
	viaRelay += "&connect_timeout=1&statement_timeout=1500"
	payload := `sh -c 'trap "echo term >\"$OUT/a.term\"; exit 0" TERM
		echo "$TETHER_EXECUTION" >"$OUT/a.id"; sleep 60 & wait'`
	a, aSaid, id := f.startRelayed("pa", "a", `ledger run lost --instant 1700000000 --lease 3s --grace 300ms -- `+payload, viaRelay)
	// Cut off: the lease cannot be renewed, and the payload gets its TERM
	// before the lease runs out. Then the partition heals, so that the
	// result can be recorded.
	r.freeze()
	testutil.WaitContent(t, filepath.Join(f.dir, "a.term"), fleetLimit)
	r.thaw()
	rc := testutil.WaitContent(t, filepath.Join(f.dir, "a.rc"), fleetLimit)
	a.Wait()
	if !strings.Contains(aSaid.String(), "exited 0 as it was being stopped: recorded completed") {
		t.Errorf("host A said %q; want it to say the payload exited 0 as it was stopped", aSaid.String())
	}
	show := "exec ledger show " + id + " --json"
	rec := f.audit(direct, show)
	if jsonField(rec, "status") == "running" {
		// The result came back after the lease ran out (a loaded machine):
		// it is kept as late once recover has judged the execution.
		time.Sleep(3500 * time.Millisecond)
		f.audit(direct, "exec ledger recover >/dev/null")
		rec = f.audit(direct, show)
	}
	status, late := jsonField(rec, "status"), jsonField(rec, "late")
	if status != "completed" && !(status == "unknown" && strings.Contains(late, `"status":"completed"`)) {
		t.Errorf("record = %s; want completed (or unknown with a late completed result)", rec)
	}
	// 0, its payload's word; 3 when its result came too late to be the
	// execution's (kept as late).
	if want := map[string]string{"completed": "0", "unknown": "3"}[status]; rc != want {
		t.Errorf("host A: ledger run = %s, its record %s; want %s", rc, status, want)
	}
}

// payloadAlive reports whether a payload (bash) runs on the host whose
// outermost process is pid.
func payloadAlive(pid int) bool {
	for _, p := range descendants(pid) {
		if b, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/comm"); strings.TrimSpace(string(b)) == "bash" {
			return true
		}
	}
	return false
}

// runners are the processes of tree that are neither a shell, the
// payload's bash, nor what it runs: the hosts' ledger runs.
func runners(tree []int) []int {
	var out []int
	for _, pid := range tree {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		switch strings.TrimSpace(string(b)) {
		case "unshare", "sh", "bash", "sleep", "psql", "flock", "cat", "grep":
			continue
		}
		if err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// descendants returns pid and every process below it.
func descendants(pid int) []int {
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		kids, _ := proc.Children(out[i])
		for _, k := range kids {
			out = append(out, k.PID)
		}
	}
	return out
}
