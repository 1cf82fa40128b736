//go:build linux

package tether_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLedgerPostgresFleetPauses (#45): hosts run the slots of one
// --exclusive --instant job under a 2s lease, and a whole host (its loop,
// its runner, its payload) is frozen (SIGSTOP) for 1 to 3 leases at random
// moments, or its runner alone (its payload runs on), then continued.
// Each payload writes to a fenced resource, a
// table that accepts a write only with a fencing token greater than the
// last one it accepted, and says whether its write was accepted.
// Verdicts: the resource never accepted a write older than one it had
// accepted; no slot completed twice; every execution ends terminal. It
// reports the pauses, the payloads alive at once (which a pause makes
// possible, and which only the token makes harmless) and the stale writes
// refused.
func TestLedgerPostgresFleetPauses(t *testing.T) {
	t.Parallel()
	f := newFleet(t)
	slots, hosts := 30, 3
	if testing.Short() {
		slots = 10
	}
	if _, err := exec.LookPath("psql"); err != nil {
		t.Skip("no psql")
	}
	psql := func(sql string) string {
		t.Helper()
		out, err := exec.Command("psql", "-X", "-tA", "-v", "ON_ERROR_STOP=1", f.dsn, "-c", sql).CombinedOutput()
		if err != nil {
			t.Fatalf("psql %s: %v\n%s", sql, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	psql(`CREATE TABLE fenced (k text PRIMARY KEY, fence bigint NOT NULL);
		INSERT INTO fenced VALUES ('r', 0);
		CREATE TABLE accepted (n bigserial PRIMARY KEY, token bigint NOT NULL, host text NOT NULL)`)
	// The payload: a little work, then the write, accepted only with a
	// greater token; what it saw goes to $OUT/log.
	script := `i=0
while [ $i -lt ` + strconv.Itoa(slots) + ` ]; do
	i=$((i + 1))
	for try in $(seq 40); do
		ledger run fp --exclusive --instant $((1700000000 + i)) --lease 2s --grace 300ms -- bash -c '
			echo "start $1 $TETHER_FENCE_TOKEN $(uname -n) $EPOCHREALTIME" >>"$OUT/log"
			sleep $(( $$ % 4 + 1 )).$(( $$ % 7 ))
			r=$(psql -X -tA "$TETHER_LEDGER" -c "WITH u AS (UPDATE fenced SET fence = $TETHER_FENCE_TOKEN WHERE k = '"'r'"' AND fence < $TETHER_FENCE_TOKEN RETURNING fence) INSERT INTO accepted (token, host) SELECT fence, '"'$(uname -n)'"' FROM u RETURNING token")
			if [ -n "$r" ]; then w=accepted; else w=refused; fi
			echo "$w $1 $TETHER_FENCE_TOKEN $(uname -n) $EPOCHREALTIME" >>"$OUT/log"' bash "$i" 2>"$OUT/err.$(uname -n)"
		rc=$?
		[ $rc = 0 ] || [ $rc = 125 ] || [ $rc = 3 ] || [ $rc = 143 ] || echo "$(uname -n) slot $i: exit $rc" >>"$OUT/errors"
		grep -q 'exclusively' "$OUT/err.$(uname -n)" || break
		sleep 0.2
	done
done`
	var hs []*exec.Cmd
	for h := 1; h <= hosts; h++ {
		c, _ := f.start(fmt.Sprintf("ph%d", h), script)
		hs = append(hs, c)
	}
	done := make(chan struct{})
	pauses := 0
	kinds := map[string]int{}
	paused := make(chan struct{})
	go func() {
		defer close(paused)
		rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 45))
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Duration(500+rng.IntN(1500)) * time.Millisecond):
			}
			c := hs[rng.IntN(len(hs))]
			tree := descendants(c.Process.Pid)
			what := "host"
			if rng.IntN(2) == 0 {
				// The runner alone: its payload runs on, and only the
				// token stops its write once another host took over.
				// The host whose payload runs now.
				what, tree = "runner", nil
				for _, k := range rng.Perm(len(hs)) {
					all := descendants(hs[k].Process.Pid)
					if slices.Contains(comms(all), "bash") {
						tree = runners(all)
						break
					}
				}
			}
			if len(tree) == 0 {
				continue
			}
			kinds[what]++
			for _, pid := range tree {
				syscall.Kill(pid, syscall.SIGSTOP)
			}
			pauses++
			select { // 1 to 3 leases
			case <-done:
			case <-time.After(time.Duration(2000+rng.IntN(4000)) * time.Millisecond):
			}
			for _, pid := range tree {
				syscall.Kill(pid, syscall.SIGCONT)
			}
		}
	}()
	for i, c := range hs {
		if err := c.Wait(); err != nil {
			t.Errorf("ph%d: %v", i+1, err)
		}
	}
	close(done)
	<-paused
	if b, err := os.ReadFile(filepath.Join(f.dir, "errors")); err == nil {
		t.Errorf("runs that failed other than by refusal, takeover or stop:\n%s", b)
	}

	// The resource: tokens it accepted, in the order it accepted them,
	// only ever grow.
	var last int64
	for _, l := range strings.Fields(psql(`SELECT token FROM accepted ORDER BY n`)) {
		tok, _ := strconv.ParseInt(l, 10, 64)
		if tok <= last {
			t.Errorf("the resource accepted token %d after %d", tok, last)
		}
		last = tok
	}
	// No slot completed twice; none left open once every lease ran out.
	time.Sleep(2500 * time.Millisecond) // the last leases, on the hosts' clocks
	f.on("auditor", "exec ledger recover >/dev/null")
	for _, l := range strings.Split(psql(`SELECT instant, count(*) FILTER (WHERE status = 'completed'),
			count(*) FILTER (WHERE status IN ('claimed', 'running')) FROM tether.executions WHERE job = 'fp' GROUP BY instant`), "\n") {
		fs := strings.Split(l, "|")
		if len(fs) == 3 && (fs[1] != "0" && fs[1] != "1" || fs[2] != "0") {
			t.Errorf("slot %s: %s completed, %s open; want at most 1 and none", fs[0], fs[1], fs[2])
		}
	}
	// Counts: payloads alive at once, stale writes refused.
	b, _ := os.ReadFile(filepath.Join(f.dir, "log"))
	type life struct{ start, end float64 }
	var lives []life
	starts := map[string]float64{}
	refused, accepted := 0, 0
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		fs := strings.Fields(l)
		if len(fs) != 5 {
			continue
		}
		at, _ := strconv.ParseFloat(fs[4], 64)
		key := fs[1] + " " + fs[2]
		switch fs[0] {
		case "start":
			starts[key] = at
		case "accepted", "refused":
			if fs[0] == "refused" {
				refused++
			} else {
				accepted++
			}
			lives = append(lives, life{starts[key], at})
		}
	}
	overlaps := 0
	for i := range lives {
		for j := i + 1; j < len(lives); j++ {
			if lives[i].start < lives[j].end && lives[j].start < lives[i].end {
				overlaps++
			}
		}
	}
	t.Logf("%d slots on %d hosts: %d pauses %v; %d writes accepted, %d stale writes refused; %d pairs of payloads alive at once", slots, hosts, pauses, kinds, accepted, refused, overlaps)
}

// runners are the processes of tree that are neither a shell, the
// payload's bash, nor what it runs: the hosts' ledger runs.
func runners(tree []int) []int {
	var out []int
	for _, pid := range tree {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		switch strings.TrimSpace(string(b)) {
		case "unshare", "sh", "bash", "sleep", "psql":
			continue
		}
		if err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// descendants returns pid and every process below it, read from /proc.
func descendants(pid int) []int {
	children := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		fs := strings.Fields(string(b[i+1:]))
		if len(fs) > 1 {
			ppid, _ := strconv.Atoi(fs[1])
			children[ppid] = append(children[ppid], p)
		}
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// comms are the command names of pids.
func comms(pids []int) []string {
	var out []string
	for _, pid := range pids {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		out = append(out, strings.TrimSpace(string(b)))
	}
	return out
}
