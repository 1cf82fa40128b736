package ledger

import (
	"bytes"
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

// deadOwner is an owner on this host that died with another boot.
func deadOwner(t testing.TB) Owner {
	o := self(t)
	o.BootID = "00000000-dead-dead-dead-000000000000"
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

// makeState returns the id of an execution in the named state.
func makeState(t *testing.T, s *Store, state string) string {
	t.Helper()
	code := 3
	switch state {
	case "claimed":
		return mustClaim(t, s, "job", ClaimOptions{}).ID
	case "fenced":
		id := mustClaim(t, s, "job", ClaimOptions{}).ID
		must(t)(s.Fence(id))
		return id
	case "running":
		id := mustClaim(t, s, "job", ClaimOptions{}).ID
		must(t)(s.Start(id, nil))
		return id
	case "adopted":
		id := makeState(t, s, "fenced")
		must(t)(s.Adopt(id, self(t)))
		return id
	case "completed", "failed":
		id := makeState(t, s, "running")
		must(t)(s.Finish(id, Status(state), &code, ""))
		return id
	case "failed-unstarted":
		id := makeState(t, s, "claimed")
		must(t)(s.Finish(id, Failed, nil, "dispatch failed"))
		return id
	case "unknown", "abandoned":
		id := mustClaim(t, s, "job", ClaimOptions{Owner: deadOwner(t)}).ID
		if state == "unknown" {
			must(t)(s.Start(id, nil))
		}
		got, err := s.Recover(time.Second)
		if err != nil || len(got) != 1 || got[0].Status != Status(state) {
			t.Fatalf("Recover = %v, %v; want one %s", got, err, state)
		}
		return id
	}
	t.Fatalf("no state %q", state)
	return ""
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

// TestTransitions drives every operation from every state: each either
// reaches the state the state machine draws or is refused, leaving the
// record byte-for-byte unchanged.
func TestTransitions(t *testing.T) {
	t.Parallel()
	code := 0
	ops := []struct {
		name string
		do   func(s *Store, id string, o Owner) (Record, error)
	}{
		{"fence", func(s *Store, id string, o Owner) (Record, error) { return s.Fence(id) }},
		{"adopt", func(s *Store, id string, o Owner) (Record, error) { return s.Adopt(id, o) }},
		{"start", func(s *Store, id string, o Owner) (Record, error) { return s.Start(id, nil) }},
		{"finish-completed", func(s *Store, id string, o Owner) (Record, error) { return s.Finish(id, Completed, &code, "") }},
		{"finish-failed", func(s *Store, id string, o Owner) (Record, error) { return s.Finish(id, Failed, nil, "x") }},
		{"set-child", func(s *Store, id string, o Owner) (Record, error) { return s.SetChild(id, o.ID()) }},
	}
	// want[state][op] is the resulting state, or "" for refused.
	const r = ""
	want := map[string][]string{
		//                 fence             adopt      start      completed    failed    set-child
		"claimed":          {"claimed+fenced", r, "running", r, "failed", r},
		"fenced":           {r, "running", r, r, r, r},
		"running":          {r, r, r, "completed", "failed", "running"},
		"adopted":          {r, r, r, "completed", "failed", "running"},
		"completed":        {r, r, r, r, r, r},
		"failed":           {r, r, r, r, r, r},
		"failed-unstarted": {r, r, r, r, r, r},
		"unknown":          {r, r, r, r, r, r},
		"abandoned":        {r, r, r, r, r, r},
	}
	s := newStore(t)
	me := self(t)
	for state, results := range want {
		for i, op := range ops {
			id := makeState(t, s, state)
			before := rawRecord(t, s, id)
			got, err := op.do(s, id, me)
			if results[i] == r {
				if !errors.Is(err, ErrRefused) {
					t.Errorf("%s from %s = %v, %v; want ErrRefused", op.name, state, got.State(), err)
				}
				if after := rawRecord(t, s, id); !bytes.Equal(before, after) {
					t.Errorf("%s from %s changed the record:\n%s\n%s", op.name, state, before, after)
				}
				if err != nil && !strings.Contains(err.Error(), "execution is") {
					t.Errorf("%s from %s: message %q does not name the state", op.name, state, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s from %s = %v; want %s", op.name, state, err, results[i])
				continue
			}
			st := string(got.Status)
			if got.Fenced && got.Status == Claimed {
				st = "claimed+fenced"
			}
			if st != results[i] {
				t.Errorf("%s from %s = %s; want %s", op.name, state, st, results[i])
			}
			if reread, err := s.Get(id); err != nil || reread.Status != got.Status {
				t.Errorf("Get after %s from %s = %v, %v; want status %s", op.name, state, reread.Status, err, got.Status)
			}
		}
	}
}

func TestRefusalMessages(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	id := makeState(t, s, "claimed")
	_, err := s.Adopt(id, self(t))
	if want := "cannot adopt " + id + ": execution is claimed, not fenced"; err == nil || err.Error() != want {
		t.Errorf("Adopt(unfenced) = %v; want %q", err, want)
	}
	_, err = s.Finish(id, Completed, nil, "")
	if err == nil || !strings.Contains(err.Error(), "can only finish as failed") {
		t.Errorf("Finish(claimed, completed) = %v; want refusal", err)
	}
	_, err = s.Get("0zzzzzzzzzzzz-zzzzzz")
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(missing) = %v; want ErrNotFound", err)
	}
	for _, bad := range []string{"", "../../etc/passwd", "ABC", "a/b", ".", "x.y", strings.Repeat("a", 65)} {
		if _, err := s.Get(bad); !errors.Is(err, ErrBadID) {
			t.Errorf("Get(%q) = %v; want ErrBadID", bad, err)
		}
		if _, err := s.Fence(bad); !errors.Is(err, ErrBadID) {
			t.Errorf("Fence(%q) = %v; want ErrBadID", bad, err)
		}
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

func TestClaimInstant(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	t1, _ := ParseInstant("2024-05-01T12:00:00+02:00")
	t2, _ := ParseInstant("1714557600") // the same instant
	a := mustClaim(t, s, "tick", ClaimOptions{Instant: t1})
	if _, err := s.Claim("tick", ClaimOptions{Owner: self(t), Instant: t2}); !errors.Is(err, ErrRefused) {
		t.Fatalf("second Claim(same instant) = %v; want ErrRefused", err)
	}
	// Another job, or another instant, is independent.
	mustClaim(t, s, "other", ClaimOptions{Instant: t1})
	mustClaim(t, s, "tick", ClaimOptions{Instant: t1.Add(time.Minute)})
	// failed may retry; the retry then blocks again.
	must(t)(s.Finish(a.ID, Failed, nil, "no"))
	b := mustClaim(t, s, "tick", ClaimOptions{Instant: t2})
	must(t)(s.Start(b.ID, nil))
	must(t)(s.Finish(b.ID, Completed, nil, ""))
	_, err := s.Claim("tick", ClaimOptions{Owner: self(t), Instant: t1})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "is completed") {
		t.Fatalf("Claim(completed instant) = %v; want refusal naming completed", err)
	}
	// Pruning the completed record does not free its instant.
	if _, err := s.Prune(PruneOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(b.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(pruned) = %v; want ErrNotFound", err)
	}
	if _, err := s.Claim("tick", ClaimOptions{Owner: self(t), Instant: t1}); !errors.Is(err, ErrRefused) {
		t.Fatalf("Claim(pruned completed instant) = %v; want ErrRefused", err)
	}
	// A claimed holder whose owner is dead is abandoned, so the instant is free.
	t3 := t1.Add(time.Hour)
	dead := mustClaim(t, s, "tick", ClaimOptions{Owner: deadOwner(t), Instant: t3})
	mustClaim(t, s, "tick", ClaimOptions{Instant: t3})
	if r, _ := s.Get(dead.ID); r.Status != Abandoned {
		t.Fatalf("dead holder status = %s; want abandoned", r.Status)
	}
	// A garbled slot falls back to reading the job's executions.
	t4 := t1.Add(2 * time.Hour)
	mustClaim(t, s, "tick", ClaimOptions{Instant: t4})
	if err := os.WriteFile(s.path(jobsDir, "tick", instantKey(t4)), []byte("\x00garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim("tick", ClaimOptions{Owner: self(t), Instant: t4}); !errors.Is(err, ErrRefused) {
		t.Fatalf("Claim(garbled slot) = %v; want ErrRefused", err)
	}
}

func TestClaimExclusive(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	a := mustClaim(t, s, "x", ClaimOptions{Exclusive: true})
	_, err := s.Claim("x", ClaimOptions{Owner: self(t), Exclusive: true})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), a.ID) {
		t.Fatalf("Claim(exclusive, live owner) = %v; want refusal naming %s", err, a.ID)
	}
	mustClaim(t, s, "y", ClaimOptions{Exclusive: true}) // another job
	must(t)(s.Start(a.ID, nil))
	if _, err := s.Claim("x", ClaimOptions{Owner: self(t), Exclusive: true}); !errors.Is(err, ErrRefused) {
		t.Fatalf("Claim(exclusive, running) = %v; want ErrRefused", err)
	}
	must(t)(s.Finish(a.ID, Completed, nil, ""))
	b := mustClaim(t, s, "x", ClaimOptions{Exclusive: true, Owner: exitedOwner(t)})
	must(t)(s.Start(b.ID, nil))
	// b's owner is dead: it is recovered as unknown and the claim proceeds.
	mustClaim(t, s, "x", ClaimOptions{Exclusive: true})
	if r, _ := s.Get(b.ID); r.Status != Unknown || !strings.Contains(r.Error, UnknownSideEffects) {
		t.Fatalf("dead running execution = %s %q; want unknown with %q", r.Status, r.Error, UnknownSideEffects)
	}
}

// TestClaimStarted: a claim with its payload already held at its gate is
// claimed, started and has its child recorded in one update; the checks of
// an ordinary claim still apply to it.
func TestClaimStarted(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	child := proc.Self()
	r := mustClaim(t, s, "x", ClaimOptions{Exclusive: true, Child: child})
	got, err := s.Get(r.ID)
	if err != nil || got.Status != Running || got.Child != child || !got.StartedAt.Equal(got.ClaimedAt) {
		t.Fatalf("Claim(child %v) = %s child %v started %v claimed %v, %v; want running with that child, started when claimed",
			child, got.Status, got.Child, got.StartedAt, got.ClaimedAt, err)
	}
	if _, err := s.Claim("x", ClaimOptions{Owner: self(t), Exclusive: true, Child: child}); !errors.Is(err, ErrRefused) {
		t.Fatalf("Claim(exclusive, child, running) = %v; want ErrRefused", err)
	}
	if _, err := s.Claim("x", ClaimOptions{Owner: self(t), Child: proc.ID{PID: -1}}); !errors.Is(err, ErrBadInput) {
		t.Fatalf("Claim(child -1) = %v; want ErrBadInput", err)
	}
}

func TestRecover(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	now := time.Now()
	s.now = func() time.Time { return now }
	me := self(t)
	if me.PIDNS == 0 {
		t.Fatalf("LocalOwner(self) = %+v; want its PID namespace", me)
	}
	other := me
	other.Host, other.BootID = "elsewhere", "00000000-0000-0000-0000-0000000000e1"
	noBoot := me
	noBoot.BootID = ""
	exited := exitedOwner(t)
	// The same boot and PID namespace under another host name: this
	// machine before it was renamed, so the owner is judged.
	renamed := exited
	renamed.Host = "old-name"
	// A record written before PID namespaces were recorded: judged as of
	// this namespace, as the version that wrote it did.
	legacy := exited
	legacy.PIDNS = 0

	alive := mustClaim(t, s, "j", ClaimOptions{})
	remote := mustClaim(t, s, "j", ClaimOptions{Owner: other})
	unreadable := mustClaim(t, s, "j", ClaimOptions{Owner: noBoot})
	abandoned := mustClaim(t, s, "j", ClaimOptions{Owner: exited})
	unknown := mustClaim(t, s, "j", ClaimOptions{Owner: exited})
	must(t)(s.Start(unknown.ID, nil))
	withChild := mustClaim(t, s, "j", ClaimOptions{Owner: exited})
	must(t)(s.Start(withChild.ID, nil))
	must(t)(s.SetChild(withChild.ID, me.ID())) // the child is alive
	fenced := mustClaim(t, s, "j", ClaimOptions{Owner: exited})
	must(t)(s.Fence(fenced.ID))
	renamedRun := mustClaim(t, s, "j", ClaimOptions{Owner: renamed})
	must(t)(s.Start(renamedRun.ID, nil))
	legacyClaim := mustClaim(t, s, "j", ClaimOptions{Owner: legacy})

	got, err := s.Recover(30 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]Status{}
	for _, r := range got {
		ids[r.ID] = r.Status
	}
	want := map[string]Status{abandoned.ID: Abandoned, unknown.ID: Unknown, renamedRun.ID: Unknown, legacyClaim.ID: Abandoned}
	if len(ids) != len(want) {
		t.Fatalf("Recover = %v; want %v", ids, want)
	}
	for id, st := range want {
		if ids[id] != st {
			t.Fatalf("Recover = %v; want %v", ids, want)
		}
	}
	for _, id := range []string{alive.ID, remote.ID, unreadable.ID, withChild.ID, fenced.ID} {
		if r, _ := s.Get(id); r.Status.Terminal() {
			t.Errorf("Recover judged %s (%s); want it left alone", id, r.Status)
		}
	}
	// After the grace the fenced claim's dead claimer is judged.
	now = now.Add(31 * time.Second)
	got, err = s.Recover(30 * time.Second)
	if err != nil || len(got) != 1 || got[0].ID != fenced.ID || got[0].Status != Abandoned {
		t.Fatalf("Recover after grace = %v, %v; want %s abandoned", got, err, fenced.ID)
	}
	if r, _ := s.Get(unknown.ID); !strings.Contains(r.Error, UnknownSideEffects) {
		t.Errorf("unknown error = %q; want it to contain %q", r.Error, UnknownSideEffects)
	}
	// Nothing left to do: recovery is idempotent.
	if got, err := s.Recover(time.Second); err != nil || len(got) != 0 {
		t.Fatalf("second Recover = %v, %v; want nothing", got, err)
	}
}

func TestLatest(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	if _, err := s.Latest("none"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Latest(no job) = %v; want ErrNotFound", err)
	}
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

func TestPrune(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	now := time.Now()
	s.now = func() time.Time { return now }
	var done []string
	for i := 0; i < 5; i++ {
		r := mustClaim(t, s, "j", ClaimOptions{})
		must(t)(s.Finish(r.ID, Failed, nil, ""))
		done = append(done, r.ID)
		now = now.Add(time.Hour)
	}
	open := mustClaim(t, s, "j", ClaimOptions{})
	other := mustClaim(t, s, "k", ClaimOptions{})
	must(t)(s.Finish(other.ID, Failed, nil, ""))

	got, err := s.Prune(PruneOptions{Keep: 3})
	if err != nil || len(got) != 2 || got[0].ID != done[0] || got[1].ID != done[1] {
		t.Fatalf("Prune(keep 3) = %v, %v; want %v", got, err, done[:2])
	}
	// Older than 150 minutes: only done[2], finished 3h ago.
	got, err = s.Prune(PruneOptions{OlderThan: 150 * time.Minute})
	if err != nil || len(got) != 1 || got[0].ID != done[2] {
		t.Fatalf("Prune(older than 150m) = %v, %v; want %v", got, err, done[2])
	}
	got, err = s.Prune(PruneOptions{})
	if err != nil || len(got) != 3 {
		t.Fatalf("Prune() = %v, %v; want 3 records", got, err)
	}
	list, err := s.List(Filter{})
	if err != nil || len(list) != 1 || list[0].ID != open.ID {
		t.Fatalf("List after prune = %v, %v; want only the open claim", list, err)
	}
	if r, err := s.Latest("j"); err != nil || r.ID != open.ID {
		t.Fatalf("Latest(j) after prune = %v, %v; want %s", r.ID, err, open.ID)
	}
	if _, err := s.Latest("k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Latest(k) after prune = %v; want ErrNotFound", err)
	}
	if names, _ := readNames(s.jobDirForTest(t, "j")); len(names) != 2 { // the open claim + _latest
		t.Fatalf("jobs/j after prune = %v; want the open claim's marker and _latest", names)
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

// TestRaceGoroutines has 100 goroutines race for one adopt and for one
// (job, instant) claim: exactly one of each wins.
func TestRaceGoroutines(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	me := self(t)
	id := makeState(t, s, "fenced")
	instant := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	var mu sync.Mutex
	adopted, claimed := 0, 0
	for i := 0; i < 100; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			// Each goroutine opens its own Store, as separate processes would.
			st, err := Open(s.Dir())
			if err != nil {
				t.Error(err)
				return
			}
			_, err = st.Adopt(id, me)
			if err != nil && !errors.Is(err, ErrRefused) {
				t.Errorf("Adopt = %v", err)
			}
			mu.Lock()
			adopted += map[bool]int{true: 1}[err == nil]
			mu.Unlock()
		}()
		go func() {
			defer wg.Done()
			_, err := s.Claim("tick", ClaimOptions{Owner: me, Instant: instant})
			if err != nil && !errors.Is(err, ErrRefused) {
				t.Errorf("Claim = %v", err)
			}
			mu.Lock()
			claimed += map[bool]int{true: 1}[err == nil]
			mu.Unlock()
		}()
	}
	wg.Wait()
	if adopted != 1 || claimed != 1 {
		t.Fatalf("winners: adopt %d, claim %d; want 1 and 1", adopted, claimed)
	}
	if list, _ := s.List(Filter{Job: "tick"}); len(list) != 1 {
		t.Fatalf("List(tick) = %d records; want 1", len(list))
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
		"claimed_at", "started_at", "finished_at", "exit_code", "error", "host", "boot_id", "pid", "start"} {
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
