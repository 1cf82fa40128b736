//go:build linux

package filestore

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/filestore/jobindex"
	"github.com/tether-sh/tether/lib/ledger/filestore/joblog"
	"github.com/tether-sh/tether/lib/ledger/ledgertest"
	"github.com/tether-sh/tether/lib/proc"
)

// newStore opens a fresh store in a temporary directory.
func newStore(t testing.TB) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "ledger"))
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	return s
}

func mustClaim(t testing.TB, s *Store, job string, o ledger.ClaimOptions) ledger.Record {
	t.Helper()
	if o.Owner.PID == 0 {
		o.Owner = ledgertest.Self(t)
	}
	r, err := s.Claim(job, o)
	if err != nil {
		t.Fatalf("Claim(%q) = %v", job, err)
	}
	return r
}

// must(t)(s.Op(...)) fails the test if the operation fails.
func must(t testing.TB) func(ledger.Record, error) ledger.Record {
	return func(r ledger.Record, err error) ledger.Record {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
}

// TestCorruptRecord damages one record's frame in the middle of its job's
// log and replaces another's link: each is reported as corrupt, naming
// what is wrong, the rest stays readable, and prune deletes nothing of a
// log it cannot read whole.
func TestCorruptRecord(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	good := mustClaim(t, s, "j", ledger.ClaimOptions{})
	bad := mustClaim(t, s, "j", ledger.ClaimOptions{})
	link := mustClaim(t, s, "j", ledger.ClaimOptions{})
	must(t)(s.Finish(good.ID, ledger.Failed, nil, ""))
	p := s.path(jobsDir, "j", joblog.Name)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(b, []byte(`"id":"`+bad.ID+`"`))
	b[at+2] ^= 1
	os.WriteFile(p, b, 0o600)
	os.Remove(s.path(activeDir, link.ID))
	os.Symlink("/etc/passwd", s.path(activeDir, link.ID))

	if _, err := s.Get(bad.ID); !errors.Is(err, ledger.ErrCorrupt) || !strings.Contains(err.Error(), p) {
		t.Errorf("Get(corrupt) = %v; want ErrCorrupt naming %s", err, p)
	}
	if _, err := s.Get(link.ID); !errors.Is(err, ledger.ErrCorrupt) || !strings.Contains(err.Error(), "bad link") {
		t.Errorf("Get(symlink) = %v; want ErrCorrupt (bad link)", err)
	}
	if _, err := s.Start(bad.ID, nil); !errors.Is(err, ledger.ErrCorrupt) {
		t.Errorf("Start(corrupt) = %v; want ErrCorrupt", err)
	}
	list, err := ledger.List(s, ledger.Filter{})
	if !errors.Is(err, ledger.ErrCorrupt) || len(list) != 1 || list[0].ID != good.ID {
		t.Errorf("List = %v, %v; want the good record and ErrCorrupt", list, err)
	}
	if r, err := s.Get(good.ID); err != nil || r.Status != ledger.Failed {
		t.Errorf("Get(good) = %v, %v; want failed", r.Status, err)
	}
	// Prune never deletes what it cannot read.
	if _, err := ledger.Pruned(s, ledger.PruneOptions{}); !errors.Is(err, ledger.ErrCorrupt) {
		t.Errorf("Prune = %v; want ErrCorrupt reported", err)
	}
	if after, err := os.ReadFile(p); err != nil || !bytes.Equal(after, b) {
		t.Errorf("Prune changed the damaged log: %v", err)
	}
}

func TestUnsafeStore(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "ledger")
	if _, err := Open(dir); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, filepath.Join(dir, jobsDir), filepath.Join(dir, lockName)} {
		fi, _ := os.Lstat(p)
		want := os.FileMode(0o600)
		if fi.IsDir() {
			want = 0o700
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s mode = %v; want %v", p, fi.Mode().Perm(), want)
		}
	}
	os.Chmod(dir, 0o777)
	if _, err := Open(dir); !errors.Is(err, ledger.ErrUnsafeStore) || !strings.Contains(err.Error(), "0777") {
		t.Errorf("Open(0777 store) = %v; want ErrUnsafeStore naming the mode", err)
	}
	os.Chmod(dir, 0o700)
	os.Chmod(filepath.Join(dir, lockName), 0o666)
	if _, err := Open(dir); !errors.Is(err, ledger.ErrUnsafeStore) {
		t.Errorf("Open(0666 lock) = %v; want ErrUnsafeStore", err)
	}
	os.Chmod(filepath.Join(dir, lockName), 0o600)
	if os.Geteuid() == 0 {
		os.Chown(dir, 65534, 65534)
		if _, err := Open(dir); !errors.Is(err, ledger.ErrUnsafeStore) || !strings.Contains(err.Error(), "owned by uid 65534") {
			t.Errorf("Open(foreign store) = %v; want ErrUnsafeStore naming the owner", err)
		}
		os.Chown(dir, 0, 0)
	}
	notStore := t.TempDir()
	os.WriteFile(filepath.Join(notStore, "precious"), nil, 0o600)
	if _, err := Open(notStore); !errors.Is(err, ledger.ErrUnsafeStore) {
		t.Errorf("Open(non-empty non-store) = %v; want ErrUnsafeStore", err)
	}
	for _, magic := range []int64{0x6969, 0xff534d42, 0xfe534d42, 0x517b} {
		if err := checkFSType("/x", magic); !errors.Is(err, ledger.ErrUnsafeStore) {
			t.Errorf("checkFSType(%#x) = %v; want ErrUnsafeStore", magic, err)
		}
	}
	if err := checkFSType("/x", 0xef53); err != nil { // ext4
		t.Errorf("checkFSType(ext4) = %v; want nil", err)
	}
}

// TestNoScan checks that the single-record operations never list the
// store's directories that grow with the number of executions (the job's
// directory) nor walk a job's log from its start. (Not parallel: it sets a package hook.)
func TestNoScan(t *testing.T) {
	s := newStore(t)
	first := mustClaim(t, s, "j", ledger.ClaimOptions{})
	must(t)(s.Finish(first.ID, ledger.Failed, nil, "never ran"))
	big := map[string]bool{s.path(jobsDir, "j"): true, s.path(jobsDir, "j", joblog.Name): true}
	var listed []string
	readNamesHook = func(dir string) {
		if big[filepath.Clean(dir)] {
			listed = append(listed, dir)
		}
	}
	joblog.WalkHook = readNamesHook
	defer func() { readNamesHook, joblog.WalkHook = nil, nil }()
	r := mustClaim(t, s, "j", ledger.ClaimOptions{Instant: time.Unix(1714557600, 0), Exclusive: true})
	must(t)(s.Start(r.ID, nil))
	must(t)(s.SetChild(r.ID, proc.ID{PID: os.Getpid()}))
	must(t)(s.Finish(r.ID, ledger.Completed, nil, ""))
	must(t)(s.Get(r.ID))
	if l, err := s.Latest("j"); err != nil || l.ID != r.ID {
		t.Fatalf("Latest = %v, %v", l.ID, err)
	}
	if len(listed) != 0 {
		t.Errorf("single-record operations listed or walked %v; want none of jobs/j or its log", listed)
	}
	// The hook does see walks: List must walk the job's log.
	if _, err := ledger.List(s, ledger.Filter{Job: "j"}); err != nil {
		t.Fatal(err)
	}
	if len(listed) == 0 {
		t.Errorf("List(j) listed nothing; the hook is not wired")
	}
}

// TestConcurrentCreate has many goroutines open (and so create) one store
// at once: all succeed.
func TestConcurrentCreate(t *testing.T) {
	t.Parallel()
	for round := 0; round < 20; round++ {
		dir := filepath.Join(t.TempDir(), "a", "ledger")
		var wg sync.WaitGroup
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := Open(dir); err != nil {
					t.Errorf("Open(new store) concurrently = %v", err)
				}
			}()
		}
		wg.Wait()
	}
}

// liveNamespace starts a process in a new PID namespace and returns that
// namespace; it skips the test where that needs privileges it lacks.
func liveNamespace(t *testing.T) uint64 {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for CLONE_NEWPID")
	}
	cmd := exec.Command("sleep", "3600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting a process in a new PID namespace: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/"+strconv.Itoa(cmd.Process.Pid)+"/ns/pid", &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// TestRecoverOtherPIDNamespace: an owner in a PID namespace that still has
// processes is never judged from here by its PID, which is not ours: not as
// the host's kthreadd (2, with another START: gone), not as our own PID
// (alive).
func TestRecoverOtherPIDNamespace(t *testing.T) {
	t.Parallel()
	ns := liveNamespace(t)
	s := newStore(t)
	me := ledgertest.Self(t)
	kthreadd := me
	kthreadd.PIDNS, kthreadd.PID, kthreadd.Start = ns, 2, me.Start+1
	mine := me
	mine.PIDNS = ns
	run := mustClaim(t, s, "j", ledger.ClaimOptions{Owner: kthreadd})
	must(t)(s.Start(run.ID, nil))
	must(t)(s.SetChild(run.ID, proc.ID{PID: 3, Start: me.Start + 2}))
	claim := mustClaim(t, s, "j", ledger.ClaimOptions{Owner: mine})
	if got, err := s.Recover(0); err != nil || len(got) != 0 {
		t.Fatalf("Recover = %v, %v; want nothing judged", got, err)
	}
	for _, id := range []string{run.ID, claim.ID} {
		if r, _ := s.Get(id); r.Status.Terminal() {
			t.Errorf("Recover judged %s (%s); want it left alone", id, r.Status)
		}
	}
	_, err := s.Claim("j", ledger.ClaimOptions{Owner: me, Exclusive: true})
	if !errors.Is(err, ledger.ErrRefused) {
		t.Errorf("Claim(j, exclusive) = %v; want refused while the runs in the other namespace may live", err)
	}
}

// TestClaimInstantGarbledSlot: a garbled @INSTANT slot falls back to
// reading the job's executions. (The rest of the instant contract is
// ledgertest's ClaimInstant.)
func TestClaimInstantGarbledSlot(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	t1, _ := ledger.ParseInstant("2024-05-01T12:00:00+02:00")
	t4 := t1.Add(2 * time.Hour)
	mustClaim(t, s, "tick", ledger.ClaimOptions{Instant: t4})
	if err := os.WriteFile(s.path(jobsDir, "tick", instantKey(t4)), []byte("\x00garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim("tick", ledger.ClaimOptions{Owner: ledgertest.Self(t), Instant: t4}); !errors.Is(err, ledger.ErrRefused) {
		t.Fatalf("Claim(garbled slot) = %v; want ErrRefused", err)
	}
}

// TestLatestFromLog: Latest is the last claim in the job's log, found
// from its end past other frames and past a torn tail, which the next
// claim cuts away. (The rest of Latest's contract is ledgertest's Latest.)
func TestLatestFromLog(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	var last ledger.Record
	for i := 0; i < 5; i++ {
		last = mustClaim(t, s, "j", ledger.ClaimOptions{})
		mustClaim(t, s, "k", ledger.ClaimOptions{})
	}
	check := func(what, want string) {
		t.Helper()
		r, err := s.Latest("j")
		if err != nil || r.ID != want {
			t.Fatalf("Latest after %s = %s, %v; want %s", what, r.ID, err, want)
		}
	}
	check("claims", last.ID)
	must(t)(s.Start(last.ID, nil))
	check("a start", last.ID)
	log := s.path(jobsDir, "j", joblog.Name)
	f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := f.Seek(0, io.SeekEnd)
	torn := joblog.Frame(logID(t, log), end, joblog.KindClaim, "0zzzzzzzzzzzz-zzzzzz", 0, []byte("{}"))
	f.Write(torn[:len(torn)-3])
	f.Close()
	check("a torn tail", last.ID)
	next := mustClaim(t, s, "j", ledger.ClaimOptions{})
	check("a claim after a torn tail", next.ID)
	if r, err := s.Get(last.ID); err != nil || r.Status != ledger.Running {
		t.Fatalf("Get(%s) after a torn tail = %v, %v; want running", last.ID, r.Status, err)
	}
}

// TestPruneMarkers: prune leaves a job's directory holding only its log
// and summary, and no link of what it removed. (The rest of Prune's contract is ledgertest's
// Prune.)
func TestPruneMarkers(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	for i := 0; i < 5; i++ {
		r := mustClaim(t, s, "j", ledger.ClaimOptions{})
		must(t)(s.Finish(r.ID, ledger.Failed, nil, ""))
	}
	mustClaim(t, s, "j", ledger.ClaimOptions{})
	other := mustClaim(t, s, "k", ledger.ClaimOptions{})
	must(t)(s.Finish(other.ID, ledger.Failed, nil, ""))
	if got, err := ledger.Pruned(s, ledger.PruneOptions{}); err != nil || len(got) != 6 {
		t.Fatalf("Prune() = %v, %v; want 6 records", got, err)
	}
	if names, _ := readNames(s.jobDirForTest(t, "j")); !slices.Equal(names, []string{jobindex.Name, joblog.Name, summaryName}) {
		t.Fatalf("jobs/j after prune = %v; want only its index, log and summary", names)
	}
}

// TestInstantKey: a slot's name is fixed width across the whole range of
// instants (ParseInstant's), so that slots sort like their instants.
func TestInstantKey(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"0", "1", "1714557600.5", "1714557600.000000001", "2024-05-01T12:00:00+02:00", "9999-12-31T23:59:59.999999999Z"} {
		got, err := ledger.ParseInstant(in)
		if err != nil {
			t.Fatalf("ParseInstant(%q) = %v", in, err)
		}
		if k := instantKey(got); len(k) != len("@20060102T150405.000000000Z") {
			t.Errorf("instantKey(%v) = %q; want fixed width", got, k)
		}
	}
}

// TestPruneSlots: prune passes each record it drops oldest first, turns
// the slot of a dropped completed execution into a tombstone, frees a
// dropped failed one's, and leaves Latest the newest claim.
func TestPruneSlots(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	t0, _ := ledger.ParseInstant("2024-05-01T12:00:00Z")
	var ids []string
	var completedSlot, failedSlot time.Time
	for i := 0; i < 7; i++ {
		o := ledger.ClaimOptions{}
		status := ledger.Completed
		switch i {
		case 1:
			o.Instant, completedSlot = t0, t0
		case 2:
			o.Instant, failedSlot = t0.Add(time.Hour), t0.Add(time.Hour)
			status = ledger.Failed
		}
		r := mustClaim(t, s, "j", o)
		if status == ledger.Completed {
			must(t)(s.Start(r.ID, nil))
		}
		must(t)(s.Finish(r.ID, status, nil, ""))
		ids = append(ids, r.ID)
	}
	open := mustClaim(t, s, "j", ledger.ClaimOptions{})
	var passed []string
	n, err := s.Prune(ledger.PruneOptions{Keep: 2}, func(r ledger.Record) error {
		passed = append(passed, r.ID)
		return nil
	})
	if err != nil || n != 5 || !slices.Equal(passed, ids[:5]) {
		t.Fatalf("Prune(keep 2) = %d, %v, passing %v; want 5, nil, passing %v", n, err, passed, ids[:5])
	}
	list, err := ledger.List(s, ledger.Filter{Job: "j"})
	if err != nil || len(list) != 3 || list[0].ID != ids[5] || list[1].ID != ids[6] || list[2].ID != open.ID {
		t.Fatalf("List after prune = %v, %v; want %v and the open claim", list, err, ids[5:])
	}
	if r, err := s.Latest("j"); err != nil || r.ID != open.ID {
		t.Fatalf("Latest after prune = %s, %v; want %s", r.ID, err, open.ID)
	}
	if b, err := os.Readlink(s.path(jobsDir, "j", instantKey(completedSlot))); err != nil || b != ids[1]+" completed" {
		t.Errorf("slot of the pruned completed run = %q, %v; want its tombstone", b, err)
	}
	if _, err := os.Lstat(s.path(jobsDir, "j", instantKey(failedSlot))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("slot of the pruned failed run: %v; want it freed", err)
	}
	if _, err := s.Claim("j", ledger.ClaimOptions{Owner: ledgertest.Self(t), Instant: completedSlot}); !errors.Is(err, ledger.ErrRefused) {
		t.Errorf("Claim(the pruned completed run's instant) = %v; want ErrRefused", err)
	}
}
