//go:build linux

package ledger

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

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

// self is the test process as an owner: alive for the whole test.
func self(t testing.TB) Owner {
	t.Helper()
	o, err := LocalOwner(proc.Self())
	if err != nil {
		t.Fatalf("LocalOwner(self) = %v", err)
	}
	return o
}

// exitedOwner is a real process of this boot that has exited.
func exitedOwner(t testing.TB) Owner {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", "exit 0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	o, err := LocalOwner(proc.ID{PID: cmd.Process.Pid})
	cmd.Wait()
	if err != nil {
		// It exited before we looked: any PID of this boot with an
		// impossible start time is just as dead.
		o = self(t)
		o.Start++
	}
	return o
}

func mustClaim(t testing.TB, s *Store, job string, o ClaimOptions) Record {
	t.Helper()
	if o.Owner.PID == 0 {
		o.Owner = self(t)
	}
	r, err := s.Claim(job, o)
	if err != nil {
		t.Fatalf("Claim(%q) = %v", job, err)
	}
	return r
}

func rawRecord(t testing.TB, s *Store, id string) []byte {
	t.Helper()
	b, err := os.ReadFile(s.path(execDir, id))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// must(t)(s.Op(...)) fails the test if the operation fails.
func must(t testing.TB) func(Record, error) Record {
	return func(r Record, err error) Record {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
}

func TestValidJob(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		job string
		ok  bool
	}{
		{"backup", true}, {"a", true}, {"A.b_c:d@e-f", true}, {"...", true}, {strings.Repeat("x", 128), true},
		{"", false}, {".", false}, {"..", false}, {"a/b", false}, {"a b", false}, {strings.Repeat("x", 129), false},
		{"é", false}, {"a\x00", false}, {"$x", false},
	} {
		if err := ValidJob(tc.job); (err == nil) != tc.ok {
			t.Errorf("ValidJob(%q) = %v; want ok=%v", tc.job, err, tc.ok)
		}
	}
}

func TestNewID(t *testing.T) {
	t.Parallel()
	prev := ""
	base := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	for i := 0; i < 1000; i++ {
		id := NewID(base.Add(time.Duration(i) * time.Microsecond))
		if err := ValidID(id); err != nil {
			t.Fatalf("NewID = %q: %v", id, err)
		}
		if len(id) != 20 {
			t.Fatalf("NewID = %q; want 20 characters", id)
		}
		if id <= prev {
			t.Fatalf("NewID = %q after %q; want increasing", id, prev)
		}
		prev = id
	}
}

func TestParseInstant(t *testing.T) {
	t.Parallel()
	want := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"2024-05-01T10:00:00Z", want, true},
		{"2024-05-01T12:00:00+02:00", want, true},
		{"2024-05-01T05:00:00-05:00", want, true},
		{"1714557600", want, true},
		{" 1714557600 ", want, true},
		{"1714557600.0", want, true},
		{"1714557600.25", want.Add(250 * time.Millisecond), true},
		{"2024-05-01T10:00:00.25Z", want.Add(250 * time.Millisecond), true},
		{"0", time.Unix(0, 0).UTC(), true},
		{"", time.Time{}, false},
		{"yesterday", time.Time{}, false},
		{"-1", time.Time{}, false},
		{"1e9", time.Time{}, false},
		{"1714557600.", time.Time{}, false},
		{"1714557600.1234567891", time.Time{}, false},
		{"99999999999999999999", time.Time{}, false},
		{"2024-05-01", time.Time{}, false},
		{"2024-05-01 10:00:00Z", time.Time{}, false},
		{"1960-01-01T00:00:00Z", time.Time{}, false},
		{"2024-13-01T10:00:00Z", time.Time{}, false},
	} {
		got, err := ParseInstant(tc.in)
		if (err == nil) != tc.ok || (tc.ok && !got.Equal(tc.want)) {
			t.Errorf("ParseInstant(%q) = %v, %v; want %v, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrBadInput) {
			t.Errorf("ParseInstant(%q) error %v does not wrap ErrBadInput", tc.in, err)
		}
		if err == nil && got.Location() != time.UTC {
			t.Errorf("ParseInstant(%q) location = %v; want UTC", tc.in, got.Location())
		}
	}
}

func TestCorruptRecord(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	good := mustClaim(t, s, "j", ClaimOptions{})
	bad := mustClaim(t, s, "j", ClaimOptions{})
	link := mustClaim(t, s, "j", ClaimOptions{})
	p := s.path(execDir, bad.ID)
	os.WriteFile(p, []byte(`{"v":1,"id":"`+bad.ID+`","status":"runn`), 0o600)
	os.Remove(s.path(execDir, link.ID))
	os.Symlink("/etc/passwd", s.path(execDir, link.ID))

	if _, err := s.Get(bad.ID); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), p) {
		t.Errorf("Get(corrupt) = %v; want ErrCorrupt naming %s", err, p)
	}
	if _, err := s.Get(link.ID); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Get(symlink) = %v; want ErrCorrupt (symbolic link)", err)
	}
	if _, err := s.Start(bad.ID, nil); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Start(corrupt) = %v; want ErrCorrupt", err)
	}
	list, err := s.List(Filter{})
	if !errors.Is(err, ErrCorrupt) || len(list) != 1 || list[0].ID != good.ID {
		t.Errorf("List = %v, %v; want the good record and ErrCorrupt", list, err)
	}
	if _, err := s.Get(good.ID); err != nil {
		t.Errorf("Get(good) = %v", err)
	}
	// Prune never deletes what it cannot read.
	if _, err := s.Prune(PruneOptions{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Prune = %v; want ErrCorrupt reported", err)
	}
	if _, err := os.Lstat(p); err != nil {
		t.Errorf("Prune removed the corrupt record: %v", err)
	}
}

func TestUnsafeStore(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "ledger")
	if _, err := Open(dir); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, filepath.Join(dir, execDir), filepath.Join(dir, lockName)} {
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
	if _, err := Open(dir); !errors.Is(err, ErrUnsafeStore) || !strings.Contains(err.Error(), "0777") {
		t.Errorf("Open(0777 store) = %v; want ErrUnsafeStore naming the mode", err)
	}
	os.Chmod(dir, 0o700)
	os.Chmod(filepath.Join(dir, lockName), 0o666)
	if _, err := Open(dir); !errors.Is(err, ErrUnsafeStore) {
		t.Errorf("Open(0666 lock) = %v; want ErrUnsafeStore", err)
	}
	os.Chmod(filepath.Join(dir, lockName), 0o600)
	if os.Geteuid() == 0 {
		os.Chown(dir, 65534, 65534)
		if _, err := Open(dir); !errors.Is(err, ErrUnsafeStore) || !strings.Contains(err.Error(), "owned by uid 65534") {
			t.Errorf("Open(foreign store) = %v; want ErrUnsafeStore naming the owner", err)
		}
		os.Chown(dir, 0, 0)
	}
	notStore := t.TempDir()
	os.WriteFile(filepath.Join(notStore, "precious"), nil, 0o600)
	if _, err := Open(notStore); !errors.Is(err, ErrUnsafeStore) {
		t.Errorf("Open(non-empty non-store) = %v; want ErrUnsafeStore", err)
	}
	for _, magic := range []int64{0x6969, 0xff534d42, 0xfe534d42, 0x517b} {
		if err := checkFSType("/x", magic); !errors.Is(err, ErrUnsafeStore) {
			t.Errorf("checkFSType(%#x) = %v; want ErrUnsafeStore", magic, err)
		}
	}
	if err := checkFSType("/x", 0xef53); err != nil { // ext4
		t.Errorf("checkFSType(ext4) = %v; want nil", err)
	}
}

func TestDefaultDir(t *testing.T) {
	for _, tc := range []struct{ ledger, xdg, home, want string }{
		{"/l", "/x", "/h", "/l"},
		{"", "/x", "/h", "/x/tether/ledger"},
		{"", "", "/h", "/h/.local/state/tether/ledger"},
		{"", "relative", "/h", "/h/.local/state/tether/ledger"},
	} {
		t.Setenv("TETHER_LEDGER", tc.ledger)
		t.Setenv("XDG_STATE_HOME", tc.xdg)
		t.Setenv("HOME", tc.home)
		if got, err := DefaultDir(); err != nil || got != tc.want {
			t.Errorf("DefaultDir(%+v) = %q, %v; want %q", tc, got, err, tc.want)
		}
	}
}

// TestNoScan checks that the single-record operations never list the
// store's directories that grow with the number of executions: exec/ and
// the job's directory. (Not parallel: it sets a package hook.)
func TestNoScan(t *testing.T) {
	s := newStore(t)
	first := mustClaim(t, s, "j", ClaimOptions{})
	must(t)(s.Finish(first.ID, Failed, nil, "never ran"))
	big := map[string]bool{s.path(execDir): true, s.path(jobsDir, "j"): true}
	var listed []string
	readNamesHook = func(dir string) {
		if big[filepath.Clean(dir)] {
			listed = append(listed, dir)
		}
	}
	defer func() { readNamesHook = nil }()
	r := mustClaim(t, s, "j", ClaimOptions{Instant: time.Unix(1714557600, 0), Exclusive: true})
	must(t)(s.Start(r.ID, nil))
	must(t)(s.SetChild(r.ID, proc.ID{PID: os.Getpid()}))
	must(t)(s.Finish(r.ID, Completed, nil, ""))
	must(t)(s.Get(r.ID))
	if l, err := s.Latest("j"); err != nil || l.ID != r.ID {
		t.Fatalf("Latest = %v, %v", l.ID, err)
	}
	if len(listed) != 0 {
		t.Errorf("single-record operations listed %v; want no listing of exec/ or jobs/j", listed)
	}
	// The hook does see listings: List must read the job's directory.
	if _, err := s.List(Filter{Job: "j"}); err != nil {
		t.Fatal(err)
	}
	if len(listed) == 0 {
		t.Errorf("List(j) listed nothing; the hook is not wired")
	}
}

func TestDecodeRoundTrip(t *testing.T) {
	t.Parallel()
	code := 137
	r := Record{
		ID: "0dn7yrqdrcn2j-shf3lc", Job: "backup", Source: "cron", Instant: time.Unix(1714557600, 0).UTC(),
		Status: Unknown, Fenced: true, FencedAt: time.Unix(1714557601, 5).UTC(),
		Owner: Owner{Host: "h", BootID: "b", PID: 42, Start: 7}, Child: proc.ID{PID: 43, Start: 8},
		ClaimedAt: time.Unix(1714557600, 1).UTC(), StartedAt: time.Unix(1714557602, 0).UTC(),
		FinishedAt: time.Unix(1714557603, 0).UTC(), ExitCode: &code, Error: "gone; " + UnknownSideEffects,
	}
	got, err := Decode(r.encode(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.encode()) != string(r.encode()) {
		t.Fatalf("Decode(encode(r)) = %s; want %s", got.encode(), r.encode())
	}
	// --json output decodes too, and has every key.
	b, _ := r.MarshalJSON()
	if _, err := Decode(b, r.ID); err != nil {
		t.Fatalf("Decode(MarshalJSON) = %v", err)
	}
	var empty Record
	empty.ID, empty.Job, empty.Status, empty.ClaimedAt, empty.Owner.PID = "a", "j", Claimed, time.Unix(1, 0), 1
	b, _ = empty.MarshalJSON()
	for _, k := range []string{"id", "job", "source", "instant", "status", "fenced", "fenced_at", "owner", "child",
		"claimed_at", "started_at", "finished_at", "exit_code", "error", "beat_at", "note", "host", "boot_id", "pid", "start"} {
		if !strings.Contains(string(b), `"`+k+`":`) {
			t.Errorf("MarshalJSON = %s; missing key %q", b, k)
		}
	}
	if _, err := Decode(r.encode(), "0dn7yrqdrcn2j-other0"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Decode(wrong id) = %v; want ErrCorrupt", err)
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

func (l liveness) String() string { return [...]string{"uncertain", "alive", "dead"}[l] }

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

// TestJudgeProcess: a PID is judged only on its own boot and in its own PID
// namespace; the host name is only a label within a boot.
func TestJudgeProcess(t *testing.T) {
	t.Parallel()
	me := self(t)
	exited := exitedOwner(t)
	with := func(o Owner, f func(*Owner)) Owner { f(&o); return o }
	const otherBoot = "00000000-0000-0000-0000-0000000000b2"
	// A namespace number no process has: a namespace that is gone, as
	// only the initial namespace can tell.
	goneNS := me.PIDNS + 1
	goneNSWant := uncertain
	if _, err := proc.PIDNamespaceGone(goneNS); err == nil {
		goneNSWant = dead
	}
	tests := []struct {
		name  string
		owner Owner
		want  liveness
	}{
		{"alive here", me, alive},
		{"gone here", exited, dead},
		{"alive, host renamed", with(me, func(o *Owner) { o.Host = "old-name" }), alive},
		{"gone, host renamed", with(exited, func(o *Owner) { o.Host = "old-name" }), dead},
		{"gone, no host name", with(exited, func(o *Owner) { o.Host = "" }), dead},
		{"alive, no pidns (older record)", with(me, func(o *Owner) { o.PIDNS = 0 }), alive},
		{"gone, no pidns (older record)", with(exited, func(o *Owner) { o.PIDNS = 0 }), dead},
		{"alive PID of a gone namespace", with(me, func(o *Owner) { o.PIDNS = goneNS }), goneNSWant},
		{"gone PID of a gone namespace", with(exited, func(o *Owner) { o.PIDNS = goneNS }), goneNSWant},
		{"earlier boot of this host", with(me, func(o *Owner) { o.BootID = otherBoot }), dead},
		{"earlier boot, other namespace", with(me, func(o *Owner) { o.BootID, o.PIDNS = otherBoot, goneNS }), dead},
		{"another host", with(me, func(o *Owner) { o.Host, o.BootID = "elsewhere", otherBoot }), uncertain},
		{"another boot, no host name", with(me, func(o *Owner) { o.Host, o.BootID = "", otherBoot }), uncertain},
		{"boot unknown", with(exited, func(o *Owner) { o.BootID = "" }), uncertain},
	}
	for _, tt := range tests {
		if got, why := judgeProcess(tt.owner, tt.owner.ID()); got != tt.want {
			t.Errorf("%s: judgeProcess(%+v) = %v (%s); want %v", tt.name, tt.owner, got, why, tt.want)
		}
	}
}

// TestRecoverOtherPIDNamespace: an owner in a PID namespace that still has
// processes is never judged from here by its PID, which is not ours: not as
// the host's kthreadd (2, with another START: gone), not as our own PID
// (alive).
func TestRecoverOtherPIDNamespace(t *testing.T) {
	t.Parallel()
	ns := liveNamespace(t)
	s := newStore(t)
	me := self(t)
	kthreadd := me
	kthreadd.PIDNS, kthreadd.PID, kthreadd.Start = ns, 2, me.Start+1
	mine := me
	mine.PIDNS = ns
	run := mustClaim(t, s, "j", ClaimOptions{Owner: kthreadd})
	must(t)(s.Start(run.ID, nil))
	must(t)(s.SetChild(run.ID, proc.ID{PID: 3, Start: me.Start + 2}))
	claim := mustClaim(t, s, "j", ClaimOptions{Owner: mine})
	if got, err := s.Recover(0); err != nil || len(got) != 0 {
		t.Fatalf("Recover = %v, %v; want nothing judged", got, err)
	}
	for _, id := range []string{run.ID, claim.ID} {
		if r, _ := s.Get(id); r.Status.Terminal() {
			t.Errorf("Recover judged %s (%s); want it left alone", id, r.Status)
		}
	}
	_, err := s.Claim("j", ClaimOptions{Owner: me, Exclusive: true})
	if !errors.Is(err, ErrRefused) {
		t.Errorf("Claim(j, exclusive) = %v; want refused while the runs in the other namespace may live", err)
	}
}

// TestClaimInstantGarbledSlot: a garbled @INSTANT slot falls back to
// reading the job's executions. (The rest of the instant contract is
// ledgertest's ClaimInstant.)
func TestClaimInstantGarbledSlot(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	t1, _ := ParseInstant("2024-05-01T12:00:00+02:00")
	t4 := t1.Add(2 * time.Hour)
	mustClaim(t, s, "tick", ClaimOptions{Instant: t4})
	if err := os.WriteFile(s.path(jobsDir, "tick", instantKey(t4)), []byte("\x00garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim("tick", ClaimOptions{Owner: self(t), Instant: t4}); !errors.Is(err, ErrRefused) {
		t.Fatalf("Claim(garbled slot) = %v; want ErrRefused", err)
	}
}

// TestLatestPointer: a garbled, missing or dangling _latest pointer falls
// back to the job's directory, and the next claim rewrites it. (The rest
// of Latest's contract is ledgertest's Latest.)
func TestLatestPointer(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	var last Record
	for i := 0; i < 5; i++ {
		last = mustClaim(t, s, "j", ClaimOptions{})
	}
	mustClaim(t, s, "k", ClaimOptions{})
	check := func(what, want string) {
		t.Helper()
		r, err := s.Latest("j")
		if err != nil || r.ID != want {
			t.Fatalf("Latest after %s = %s, %v; want %s", what, r.ID, err, want)
		}
	}
	check("claims", last.ID)
	ptr := s.path(jobsDir, "j", latestName)
	os.WriteFile(ptr, []byte("garbage!\n"), 0o600)
	check("garbled pointer", last.ID)
	os.Remove(ptr)
	check("missing pointer", last.ID)
	// A claim that died between its pointer and its record.
	os.WriteFile(ptr, []byte("0zzzzzzzzzzzz-zzzzzz "+last.ID+"\n"), 0o600)
	check("dangling head", last.ID)
	next := mustClaim(t, s, "j", ClaimOptions{})
	check("claim after dangling head", next.ID)
	if b, _ := os.ReadFile(ptr); string(b) != next.ID+" "+last.ID+"\n" {
		t.Fatalf("pointer = %q; want %q", b, next.ID+" "+last.ID+"\n")
	}
}

// TestPruneMarkers: prune leaves a job's directory holding only the
// markers of what remains. (The rest of Prune's contract is ledgertest's
// Prune.)
func TestPruneMarkers(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	for i := 0; i < 5; i++ {
		r := mustClaim(t, s, "j", ClaimOptions{})
		must(t)(s.Finish(r.ID, Failed, nil, ""))
	}
	mustClaim(t, s, "j", ClaimOptions{})
	other := mustClaim(t, s, "k", ClaimOptions{})
	must(t)(s.Finish(other.ID, Failed, nil, ""))
	if got, err := s.Prune(PruneOptions{}); err != nil || len(got) != 6 {
		t.Fatalf("Prune() = %v, %v; want 6 records", got, err)
	}
	if names, _ := readNames(s.jobDirForTest(t, "j")); len(names) != 3 { // the open claim, _latest, _summary
		t.Fatalf("jobs/j after prune = %v; want the open claim's marker, _latest and _summary", names)
	}
}
