//go:build linux

package filestore

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/internal/testutil"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/filestore/jobindex"
	"github.com/tether-sh/tether/lib/ledger/filestore/joblog"
	"github.com/tether-sh/tether/lib/proc"
)

// The test binary doubles as a helper process: with LEDGER_TEST_HELPER set
// it runs one of the helpers below instead of the tests.
const helper = testutil.Role("LEDGER_TEST_HELPER")

func TestMain(m *testing.M) {
	helper.Serve(runHelper)
	os.Exit(m.Run())
}

func runHelper(mode string, args []string) int {
	switch mode {
	case "writer":
		if at := os.Getenv("LEDGER_TEST_CRASH_AT"); at != "" {
			crashAt(at)
		}
		// An index written anew, sorted, every third finish of a job,
		// so that kills land in that too.
		jobindex.TailMax = 2
		return writer(args[0], args[1])
	case "open":
		if at := os.Getenv("LEDGER_TEST_CRASH_AT"); at != "" {
			crashAt(at)
		}
		if _, err := Open(args[0]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	case "fullstore":
		if err := fullStore(args[0]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown helper", mode)
	return 2
}

func helperCmd(mode string, args ...string) *exec.Cmd {
	cmd := helper.Command(mode, args...)
	cmd.Stderr = os.Stderr
	return cmd
}

// crashWriter runs a writer (seed) on the store at dir that kills itself
// at crash point at ("POINT:N", see crashAt), with env added, and fails
// the test unless the kill is how it ended.
func crashWriter(t *testing.T, dir string, seed int, at string, env ...string) {
	t.Helper()
	cmd := helperCmd("writer", dir, strconv.Itoa(seed))
	cmd.Env = append(append(cmd.Env, "LEDGER_TEST_CRASH_AT="+at), env...)
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("writer (crash at %s) ended with %v; want SIGKILL", at, err)
	}
}

var crashInstants = []time.Time{
	time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC),
	time.Date(2024, 5, 1, 10, 1, 0, 0, time.UTC),
	time.Date(2024, 5, 1, 10, 2, 0, 0, time.UTC),
}

// writer runs every kind of write at random until it is killed (or gives
// up after 5000, exit 4).
func writer(dir, seed string) int {
	n, _ := strconv.ParseUint(seed, 10, 64)
	rnd := rand.New(rand.NewPCG(n, 42))
	s, err := Open(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "writer:", err)
		return 3
	}
	me, err := ledger.LocalOwner(proc.Self())
	if err != nil {
		fmt.Fprintln(os.Stderr, "writer:", err)
		return 3
	}
	os.Stdout.Write([]byte("ready\n"))
	code := 0
	check := func(err error) bool {
		if err != nil && !errors.Is(err, ledger.ErrRefused) {
			fmt.Fprintln(os.Stderr, "writer:", err)
			os.Exit(3)
		}
		return err == nil
	}
	for i := 0; ; i++ {
		if i == 5000 {
			// A crash point never reached: fail, rather than run on.
			fmt.Fprintln(os.Stderr, "writer: 5000 writes and still alive")
			return 4
		}
		job := []string{"a", "b", "c"}[rnd.IntN(3)]
		o := ledger.ClaimOptions{Owner: me, Exclusive: rnd.IntN(4) == 0}
		if rnd.IntN(2) == 0 {
			o.Instant = crashInstants[rnd.IntN(len(crashInstants))]
		}
		r, err := s.Claim(job, o)
		if !check(err) {
			continue
		}
		switch rnd.IntN(5) {
		case 0:
			if _, err := s.Start(r.ID, nil); check(err) {
				_, err = s.Finish(r.ID, []ledger.Status{ledger.Completed, ledger.Failed}[rnd.IntN(2)], &code, "")
				check(err)
			}
		case 1:
			if _, err := s.Fence(r.ID); check(err) {
				if _, err := s.Adopt(r.ID, me); check(err) {
					if _, err := s.SetChild(r.ID, me.ID()); check(err) {
						_, err = s.Finish(r.ID, ledger.Failed, &code, "boom")
						check(err)
					}
				}
			}
		case 2:
			_, err = s.Finish(r.ID, ledger.Failed, nil, "never started")
			check(err)
		case 3:
			_, err = s.Recover(time.Millisecond)
			check(err)
		case 4:
			if rnd.IntN(10) == 0 && os.Getenv("LEDGER_TEST_NO_PRUNE") == "" {
				_, err = ledger.Pruned(s, ledger.PruneOptions{Keep: 3})
				check(err)
			}
		}
	}
}

// crashAt makes this process SIGKILL itself the Nth time it reaches the
// crash point named by at ("POINT:N").
func crashAt(at string) {
	point, n, _ := strings.Cut(at, ":")
	left, _ := strconv.Atoi(n)
	crashPoint = func(name string) {
		if name != point {
			return
		}
		if left--; left <= 0 {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
	joblog.CrashPoint = crashPoint
}

// crashPoints are the points between two steps of the write paths (see
// reached): a claim whose link is made but not synced; a frame half
// written (a torn tail), written but not synced, and appended but its
// link not moved; a terminal record in its job's index and still linked
// in active/;
// a summary about to be cached; a log's next generation renamed into
// place but the links not yet pointed at it.
var crashPoints = []string{"claim-linked", "log-torn", "log-written", "appended", "indexed", "settle", "prune-renamed"}

// TestCrashPoints kills writers exactly at each crash point, many times
// over one store, and checks the store after each kill.
func TestCrashPoints(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "ledger")
	if _, err := Open(dir); err != nil {
		t.Fatal(err)
	}
	rounds := 6
	if testing.Short() {
		rounds = 2
	}
	tokens := map[string]uint64{}
	seed := 1000
	for round := 0; round < rounds; round++ {
		for _, point := range crashPoints {
			seed++
			crashWriter(t, dir, seed, fmt.Sprintf("%s:%d", point, 1+rand.IntN(8)))
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			checkSummaries(t, s, checkStore(t, s), false)
			checkTokens(t, s, tokens)
			if t.Failed() {
				t.Fatalf("store broken after a kill at %s", point)
			}
		}
	}
	s, _ := Open(dir)
	if _, err := s.Recover(time.Nanosecond); err != nil {
		t.Fatalf("Recover = %v", err)
	}
	for _, r := range checkStore(t, s) {
		if !r.Status.Terminal() {
			t.Errorf("after Recover, %s is %s; want terminal", r.ID, r.Status)
		}
	}
}

// TestCrashSummaries kills writers that never prune at the points around
// a finish, and checks after each kill that every job's summary counts
// exactly what its records hold: nothing lost, nothing counted twice.
func TestCrashSummaries(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "ledger")
	if _, err := Open(dir); err != nil {
		t.Fatal(err)
	}
	seed := 5000
	for round := 0; round < 4; round++ {
		for _, point := range []string{"log-torn", "log-written", "appended", "indexed", "settle"} {
			seed++
			crashWriter(t, dir, seed, fmt.Sprintf("%s:%d", point, 1+rand.IntN(8)), "LEDGER_TEST_NO_PRUNE=1")
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			checkSummaries(t, s, checkStore(t, s), true)
			if round%2 == 1 {
				// Settling the leftovers changes nothing either.
				if _, err := s.Recover(time.Hour); err != nil {
					t.Fatal(err)
				}
				checkSummaries(t, s, checkStore(t, s), true)
			}
			s.Close()
			if t.Failed() {
				t.Fatalf("summaries wrong after a kill at %s", point)
			}
		}
	}
}

// checkSummaries checks every job's summary against its records recs: with
// exact (no prune ran), Runs counts exactly the terminal records held.
func checkSummaries(t *testing.T, s *Store, recs []ledger.Record, exact bool) {
	t.Helper()
	sums, err := s.Summaries()
	if err != nil {
		t.Fatalf("Summaries = %v", err)
	}
	byJob := map[string][]ledger.Record{}
	for _, r := range recs {
		byJob[r.Job] = append(byJob[r.Job], r)
	}
	for _, sum := range sums {
		held := map[ledger.Status]uint64{}
		live := 0
		var last, success ledger.Record
		for _, r := range byJob[sum.Job] {
			if !r.Status.Terminal() {
				live++
				continue
			}
			held[r.Status]++
			if newerFinish(r, last) {
				last = r
			}
			if r.Status == ledger.Completed && newerFinish(r, success) {
				success = r
			}
		}
		if sum.Live != live {
			t.Errorf("summary of %s: Live = %d; want %d", sum.Job, sum.Live, live)
		}
		for _, st := range ledger.Statuses {
			if exact && sum.Runs[st] != held[st] || sum.Runs[st] < held[st] {
				t.Errorf("summary of %s: Runs[%s] = %d; hold %d", sum.Job, st, sum.Runs[st], held[st])
			}
		}
		if exact && (sum.LastFinished.ID != last.ID || sum.LastSuccess.ID != success.ID) {
			t.Errorf("summary of %s: last finished %s, last success %s; want %s, %s", sum.Job, sum.LastFinished.ID, sum.LastSuccess.ID, last.ID, success.ID)
		}
	}
}

// TestCrash SIGKILLs writer processes at random instants, over and over,
// then checks that every record parses and is a legal state, that the
// indexes agree with the records, and that recovery settles everything.
func TestCrash(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "ledger")
	if _, err := Open(dir); err != nil {
		t.Fatal(err)
	}
	rounds := 40
	if testing.Short() {
		rounds = 10
	}
	if n, err := strconv.Atoi(os.Getenv("LEDGER_CRASH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	seed := 0
	for round := 0; round < rounds; round++ {
		var cmds []*exec.Cmd
		for w := 0; w < 3; w++ {
			seed++
			cmd := helperCmd("writer", dir, strconv.Itoa(seed))
			ready, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if _, err := ready.Read(make([]byte, 6)); err != nil {
				t.Fatalf("writer did not start: %v", err)
			}
			cmds = append(cmds, cmd)
		}
		// Not a readiness wait: how long the writers write before the kill.
		time.Sleep(time.Duration(rand.IntN(40)) * time.Millisecond)
		for _, cmd := range cmds {
			cmd.Process.Signal(syscall.SIGKILL)
		}
		for _, cmd := range cmds {
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("writer ended with %v before it was killed", err)
			}
		}
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	recs := checkStore(t, s)
	if len(recs) == 0 {
		t.Fatal("the writers wrote nothing")
	}
	got, err := s.Recover(time.Nanosecond)
	if err != nil {
		t.Fatalf("Recover = %v", err)
	}
	t.Logf("%d records after %d rounds; recovered %d", len(recs), rounds, len(got))
	for _, r := range checkStore(t, s) {
		if !r.Status.Terminal() {
			t.Errorf("after Recover, %s is %s; want terminal (its owner was killed)", r.ID, r.Status)
		}
	}
}

// checkStore verifies every record and index entry in s and returns the
// records.
// checkTokens checks the fencing tokens of s: every execution has one,
// none twice in a job, and the greatest a job's next claim counts from
// (lastToken) is at least every token its executions hold and every one
// seen before (seen, updated), a kill, a power cut or a prune
// notwithstanding.
func checkTokens(t *testing.T, s *Store, seen map[string]uint64) {
	t.Helper()
	all, err := ledger.List(s, ledger.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]map[uint64]string{}
	for _, r := range all {
		if held[r.Job] == nil {
			held[r.Job] = map[uint64]string{}
		}
		if other, dup := held[r.Job][r.Token]; dup || r.Token == 0 {
			t.Errorf("%s of %s has token %d (as %q)", r.ID, r.Job, r.Token, other)
		}
		held[r.Job][r.Token] = r.ID
		seen[r.Job] = max(seen[r.Job], r.Token)
	}
	for job, top := range seen {
		jd, l, ok, err := s.openJob(job)
		if err != nil || !ok {
			continue // a job whose only claim a kill cut short
		}
		last, err := l.lastToken()
		l.Close()
		closeDir(jd)
		if err != nil || last < top {
			t.Errorf("%s: next claim counts from token %d, %v; want at least %d, given before", job, last, err, top)
		}
		seen[job] = max(top, last)
	}
}

func checkStore(t *testing.T, s *Store) []ledger.Record {
	t.Helper()
	all, err := ledger.List(s, ledger.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var recs []ledger.Record
	byJob := map[string][]ledger.Record{}
	for _, r := range all {
		if got, err := s.Get(r.ID); err != nil || got.Status != r.Status {
			t.Errorf("Get(%s) = %v, %v; want it %s as List has it", r.ID, got.Status, err, r.Status)
			continue
		}
		recs = append(recs, r)
		byJob[r.Job] = append(byJob[r.Job], r)
		_, linkErr := os.Lstat(s.path(activeDir, r.ID))
		switch {
		case !r.Status.Terminal() && linkErr != nil:
			t.Errorf("%s record %s has no link in active/: %v", r.Status, r.ID, linkErr)
		case r.Status.Terminal() && linkErr != nil && !indexedOrUntrusted(t, s, r):
			t.Errorf("%s record %s has no link in active/ and is not in its job's index", r.Status, r.ID)
		}
	}
	for _, r := range checkLive(t, s) {
		if !slices.ContainsFunc(recs, func(x ledger.Record) bool { return x.ID == r.ID }) {
			t.Errorf("%s is in active/ but not in its job's log", r.ID)
		}
	}
	for job, rs := range byJob {
		if l, err := s.Latest(job); err != nil || l.ID != rs[len(rs)-1].ID {
			t.Errorf("Latest(%s) = %s, %v; want %s", job, l.ID, err, rs[len(rs)-1].ID)
		}
		for _, in := range crashInstants {
			var holders []string
			for _, r := range rs {
				if r.Instant.Equal(in) && ledger.BlocksInstant(r.Status) {
					holders = append(holders, r.ID)
				}
			}
			if len(holders) > 1 {
				t.Errorf("job %s instant %v has %d blocking executions: %v", job, in, len(holders), holders)
			}
			if len(holders) == 1 {
				b, err := readSlot(s.jobDirForTest(t, job), instantKey(in))
				if f := strings.Fields(string(b)); err != nil || len(f) == 0 || f[0] != holders[0] {
					t.Errorf("job %s slot %v = %q, %v; want %s", job, in, b, err, holders[0])
				}
			}
		}
	}
	return recs
}

// indexedOrUntrusted reports whether terminal record r is in its job's
// index, or the index is one no reader trusts (missing, or of another
// generation than the log: a prune cut short), so that the log is read.
func indexedOrUntrusted(t *testing.T, s *Store, r ledger.Record) bool {
	in, trusted := indexState(t, s, r.Job, r.ID)
	return in || !trusted
}

// indexState reports whether execution id is in job's index, pointing at
// the frame that made it terminal, and whether the index is trusted (of
// the log's generation).
func indexState(t *testing.T, s *Store, job, id string) (in, trusted bool) {
	t.Helper()
	jd, l, ok, err := s.openJob(job)
	if err != nil || !ok {
		t.Fatalf("opening job %s: %v, %v", job, ok, err)
	}
	defer closeDir(jd)
	defer l.Close()
	f, trusted := readIds(jd)
	if !trusted || !f.Of(l.Gen, l.Ino) {
		return false, false
	}
	for _, off := range jobindex.Offsets(f.Entries, jobindex.Hash(id)) {
		if e, err := l.ReadAt(off); err == nil && string(e.ID) == id && terminalFrame(e) {
			return true, true
		}
	}
	return false, true
}

// TestFullAndReadOnlyStore fills a tiny tmpfs until writes fail, then makes
// it read-only: every failure is a system error, and every record stays
// readable and legal. It needs root for the mounts, which are made in a
// private mount namespace of a helper process.
func TestFullAndReadOnlyStore(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	cmd := helperCmd("fullstore", t.TempDir())
	cmd.Stderr = nil
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	out, err := cmd.CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "cannot mount") {
			t.Skip(string(out))
		}
		t.Fatalf("fullstore helper: %v\n%s", err, out)
	}
}

func fullStore(mnt string) error {
	if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("cannot mount: %v", err)
	}
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=96k,mode=0700"); err != nil {
		return fmt.Errorf("cannot mount: %v", err)
	}
	dir := filepath.Join(mnt, "ledger")
	s, err := Open(dir)
	if err != nil {
		return err
	}
	me, _ := ledger.LocalOwner(proc.Self())
	// Three finished executions of a job of their own, for a prune on the
	// full store (named to sort after the others).
	for i := 0; i < 3; i++ {
		r, err := s.Claim("zdone", ledger.ClaimOptions{Owner: me})
		if err == nil {
			_, err = s.Start(r.ID, nil)
		}
		if err == nil {
			_, err = s.Finish(r.ID, ledger.Completed, nil, "")
		}
		if err != nil {
			return err
		}
	}
	var ids []string
	var fullErr error
	for i := 0; i < 1000 && fullErr == nil; i++ {
		r, err := s.Claim(fmt.Sprintf("job%d", i%3), ledger.ClaimOptions{Owner: me})
		if err != nil {
			fullErr = err
			break
		}
		ids = append(ids, r.ID)
		if _, err := s.Start(r.ID, nil); err != nil {
			fullErr = err
		}
	}
	if fullErr == nil || len(ids) == 0 {
		return fmt.Errorf("the store never filled up (%d claims)", len(ids))
	}
	if !errors.Is(fullErr, unix.ENOSPC) || wrapsAny(fullErr, ledger.ErrCorrupt, ledger.ErrRefused, ledger.ErrNotFound) {
		return fmt.Errorf("full store: %v; want ENOSPC as a system error", fullErr)
	}
	verify := func(when string) error {
		list, err := ledger.List(s, ledger.Filter{})
		if err != nil {
			return fmt.Errorf("%s: List = %v", when, err)
		}
		if len(list) < len(ids) {
			return fmt.Errorf("%s: List has %d records; want at least %d", when, len(list), len(ids))
		}
		for _, id := range ids {
			if _, err := s.Get(id); err != nil {
				return fmt.Errorf("%s: Get(%s) = %v", when, id, err)
			}
		}
		return nil
	}
	if err := verify("full"); err != nil {
		return err
	}
	// Prune cannot write zdone's next log: it deletes nothing, counts
	// nothing and passes nothing on.
	passed := 0
	n, err := s.Prune(ledger.PruneOptions{Job: "zdone", Keep: 1}, func(ledger.Record) error { passed++; return nil })
	if n != 0 || passed != 0 || !errors.Is(err, unix.ENOSPC) {
		return fmt.Errorf("Prune of a full store = %d (%d passed), %v; want 0, none, ENOSPC", n, passed, err)
	}
	if done, err := ledger.List(s, ledger.Filter{Job: "zdone"}); err != nil || len(done) != 3 {
		return fmt.Errorf("after a failed prune, zdone has %d records (%v); want its 3", len(done), err)
	}
	if _, err := s.Finish(ids[0], ledger.Completed, nil, strings.Repeat("x", 4000)); err == nil {
		// Finish may fit; then it must be durable and legal.
		if r, err := s.Get(ids[0]); err != nil || r.Status != ledger.Completed {
			return fmt.Errorf("Finish on a full store reported success but Get = %v, %v", r.Status, err)
		}
	}
	if err := unix.Mount("", mnt, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		return fmt.Errorf("cannot mount: remount read-only: %v", err)
	}
	if _, err := s.Claim("job0", ledger.ClaimOptions{Owner: me}); err == nil || wrapsAny(err, ledger.ErrCorrupt, ledger.ErrRefused, ledger.ErrNotFound, ledger.ErrBadInput) {
		return fmt.Errorf("Claim on a read-only store = %v; want a system error", err)
	}
	if _, err := s.Start(ids[len(ids)-1], nil); err == nil {
		return fmt.Errorf("Start on a read-only store succeeded")
	}
	ro, err := Open(dir)
	if err != nil {
		return fmt.Errorf("Open(read-only store) = %v", err)
	}
	sums, err := ro.Summaries()
	if err != nil || len(sums) != 4 {
		return fmt.Errorf("Summaries of a read-only store = %d, %v; want 4 jobs", len(sums), err)
	}
	if final, err := ro.Get(ids[0]); err == nil && final.Status.Terminal() && sums[0].Runs[final.Status] != 1 {
		return fmt.Errorf("Summaries of a read-only store: job0 runs %v; want its %s execution counted", sums[0].Runs, final.Status)
	}
	return verify("read-only")
}

// wrapsAny reports whether err wraps any of targets.
func wrapsAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

// checkLive returns the live records that active/ links to.
func checkLive(t *testing.T, s *Store) []ledger.Record {
	t.Helper()
	var out []ledger.Record
	for _, st := range []ledger.Status{ledger.Claimed, ledger.Running} {
		l, err := ledger.List(s, ledger.Filter{Status: st})
		if err != nil {
			t.Errorf("List(%s) = %v", st, err)
		}
		out = append(out, l...)
	}
	return out
}

// cutPower does to the store at dir what a power cut may do to it: every
// link and index entry not flushed is lost. They are flushed only when a
// boot's first writer makes them whole (linked.go), so take the worst:
// every link in active/ gone, every job's index left with no
// entry (its header naming the log's generation still, so that only the
// note tells it from a whole one: emptyIds), and the note naming another
// boot.
func cutPower(t *testing.T, dir string) {
	t.Helper()
	jobs, err := os.ReadDir(filepath.Join(dir, jobsDir))
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		emptyIds(t, filepath.Join(dir, jobsDir, j.Name(), jobindex.Name))
	}
	for _, sub := range []string{activeDir} {
		ents, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if err := os.Remove(filepath.Join(dir, sub, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, linkedName), []byte("another-boot\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestPowerCut kills writers at the crash points, then takes away every
// link as a power cut may, and checks that readers still find every
// execution (by id, by status, in the summaries) without a link and
// without writing one, and that the next writer, killed or not while it
// makes the links whole, leaves a store whose every live execution has
// its link again.
func TestPowerCut(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "ledger")
	if _, err := Open(dir); err != nil {
		t.Fatal(err)
	}
	seed := 9000
	tokens := map[string]uint64{}
	rounds := 3
	if testing.Short() {
		rounds = 1
	}
	for round := 0; round < rounds; round++ {
		for _, point := range append([]string{"relinked"}, crashPoints...) {
			seed++
			at := fmt.Sprintf("%s:%d", point, 1+rand.IntN(8))
			if point == "relinked" {
				// Once a process: at its first write.
				at = "relinked:1"
			}
			crashWriter(t, dir, seed, at)
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			before := checkStore(t, s)
			checkTokens(t, s, tokens)
			sums, err := s.Summaries()
			if err != nil {
				t.Fatal(err)
			}
			s.Close()

			cutPower(t, dir)
			s, err = Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			if s.linksWhole() {
				t.Fatalf("after the cut, linksWhole() = true; want false")
			}
			after, err := ledger.List(s, ledger.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := statuses(after), statuses(before); got != want {
				t.Errorf("after the cut (kill at %s), List = %s; want %s", at, got, want)
			}
			var live []ledger.Record
			for _, r := range before {
				got, err := s.Get(r.ID)
				if err != nil || got.Status != r.Status {
					t.Errorf("after the cut, Get(%s) = %v, %v; want it %s", r.ID, got.Status, err, r.Status)
				}
				if !r.Status.Terminal() {
					live = append(live, r)
				}
				// What a writer that could not make the links whole
				// (linked.go) checks before a claim of a chosen id and
				// before keeping an output.
				if err := s.freshID(r.ID, r.Job); !errors.Is(err, ledger.ErrBadInput) {
					t.Errorf("after the cut, freshID(%s, %s) = %v; want it to exist already", r.ID, r.Job, err)
				}
				if in, err := s.stored(r.ID); !in {
					t.Errorf("after the cut, stored(%s) = false, %v; want true", r.ID, err)
				}
			}
			if got, want := statuses(checkLive(t, s)), statuses(live); got != want {
				t.Errorf("after the cut, the live executions = %s; want %s", got, want)
			}
			if got, err := s.Summaries(); err != nil || !reflect.DeepEqual(got, sums) {
				t.Errorf("after the cut, Summaries() = %v, %v; want %v", got, err, sums)
			}
			if _, err := s.Get("0000000000000-absent"); !errors.Is(err, ledger.ErrNotFound) {
				t.Errorf("after the cut, Get(absent) = %v; want ErrNotFound", err)
			}
			for _, sub := range []string{activeDir} {
				if ents, _ := os.ReadDir(filepath.Join(dir, sub)); len(ents) > 0 {
					t.Errorf("readers wrote %d links in %s/; want none", len(ents), sub)
				}
			}
			if t.Failed() {
				t.Fatalf("store unreadable after a kill at %s and a power cut", at)
			}
			s.Close()
		}
	}
	// A writer makes the links whole and notes it.
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := s.lock()
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	checkSummaries(t, s, checkStore(t, s), false)
	if b, err := os.ReadFile(filepath.Join(dir, linkedName)); err != nil || string(b) != linkedNote() {
		t.Errorf("after a writer, the note = %q, %v; want %q", b, err, linkedNote())
	}
}

// statuses lists recs as "ID:STATUS", sorted by id.
func statuses(recs []ledger.Record) string {
	var out []string
	for _, r := range recs {
		out = append(out, r.ID+":"+string(r.Status))
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// emptyIds leaves the index at path with no entry, its header saying so
// and naming the log it named: an index that a reader trusts, and that
// only the boot's note tells from a whole one. None is left alone.
func emptyIds(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err != nil || len(b) < jobindex.Head {
		t.Fatalf("emptyIds(%s): %d bytes, %v", path, len(b), err)
	}
	if err := os.WriteFile(path, append(b[:jobindex.Head-8:jobindex.Head-8], 0, 0, 0, 0, 0, 0, 0, 0), 0o600); err != nil {
		t.Fatal(err)
	}
}
