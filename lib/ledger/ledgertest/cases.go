package ledgertest

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/proc"
)

// testTransitions drives every operation from every state: each either
// reaches the state the state machine draws or is refused, leaving the
// record byte-for-byte unchanged.
func testTransitions(t *testing.T, h Harness) {
	code := 0
	ops := []struct {
		name string
		do   func(s ledger.Ledger, id string, o ledger.Owner) (ledger.Record, error)
	}{
		{"fence", func(s ledger.Ledger, id string, o ledger.Owner) (ledger.Record, error) { return s.Fence(id) }},
		{"adopt", func(s ledger.Ledger, id string, o ledger.Owner) (ledger.Record, error) { return s.Adopt(id, o) }},
		{"start", func(s ledger.Ledger, id string, o ledger.Owner) (ledger.Record, error) { return s.Start(id, nil) }},
		{"finish-completed", func(s ledger.Ledger, id string, o ledger.Owner) (ledger.Record, error) {
			return s.Finish(id, ledger.Completed, &code, "")
		}},
		{"finish-failed", func(s ledger.Ledger, id string, o ledger.Owner) (ledger.Record, error) {
			return s.Finish(id, ledger.Failed, nil, "x")
		}},
		{"set-child", func(s ledger.Ledger, id string, o ledger.Owner) (ledger.Record, error) { return s.SetChild(id, o.ID()) }},
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
	s := h.open(t, nil)
	me := Self(t)
	for state, results := range want {
		for i, op := range ops {
			id := MakeState(t, s, state)
			before := h.raw(t, s, id)
			got, err := op.do(s, id, me)
			if results[i] == r {
				if !errors.Is(err, ledger.ErrRefused) {
					t.Errorf("%s from %s = %v, %v; want ledger.ErrRefused", op.name, state, got.State(), err)
				}
				if after := h.raw(t, s, id); !bytes.Equal(before, after) {
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
			if got.Fenced && got.Status == ledger.Claimed {
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

func testRefusalMessages(t *testing.T, h Harness) {
	s := h.open(t, nil)
	id := MakeState(t, s, "claimed")
	_, err := s.Adopt(id, Self(t))
	if want := "cannot adopt " + id + ": execution is claimed, not fenced"; err == nil || err.Error() != want {
		t.Errorf("Adopt(unfenced) = %v; want %q", err, want)
	}
	_, err = s.Finish(id, ledger.Completed, nil, "")
	if err == nil || !strings.Contains(err.Error(), "can only finish as failed") {
		t.Errorf("Finish(claimed, completed) = %v; want refusal", err)
	}
	_, err = s.Get("0zzzzzzzzzzzz-zzzzzz")
	if !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Get(missing) = %v; want ledger.ErrNotFound", err)
	}
	for _, bad := range []string{"", "../../etc/passwd", "ABC", "a/b", ".", "x.y", strings.Repeat("a", 65)} {
		if _, err := s.Get(bad); !errors.Is(err, ledger.ErrBadID) {
			t.Errorf("Get(%q) = %v; want ledger.ErrBadID", bad, err)
		}
		if _, err := s.Fence(bad); !errors.Is(err, ledger.ErrBadID) {
			t.Errorf("Fence(%q) = %v; want ledger.ErrBadID", bad, err)
		}
	}
}

func testClaimInstant(t *testing.T, h Harness) {
	s := h.open(t, nil)
	t1, _ := ledger.ParseInstant("2024-05-01T12:00:00+02:00")
	t2, _ := ledger.ParseInstant("1714557600") // the same instant
	a := MustClaim(t, s, "tick", ledger.ClaimOptions{Instant: t1})
	if _, err := s.Claim("tick", ledger.ClaimOptions{Owner: Self(t), Instant: t2}); !errors.Is(err, ledger.ErrRefused) {
		t.Fatalf("second Claim(same instant) = %v; want ledger.ErrRefused", err)
	}
	// Another job, or another instant, is independent.
	MustClaim(t, s, "other", ledger.ClaimOptions{Instant: t1})
	MustClaim(t, s, "tick", ledger.ClaimOptions{Instant: t1.Add(time.Minute)})
	// failed may retry; the retry then blocks again.
	Must(t)(s.Finish(a.ID, ledger.Failed, nil, "no"))
	b := MustClaim(t, s, "tick", ledger.ClaimOptions{Instant: t2})
	Must(t)(s.Start(b.ID, nil))
	Must(t)(s.Finish(b.ID, ledger.Completed, nil, ""))
	_, err := s.Claim("tick", ledger.ClaimOptions{Owner: Self(t), Instant: t1})
	if !errors.Is(err, ledger.ErrRefused) || !strings.Contains(err.Error(), "is completed") {
		t.Fatalf("Claim(completed instant) = %v; want refusal naming completed", err)
	}
	// Pruning the completed record does not free its instant.
	if _, err := ledger.Pruned(s, ledger.PruneOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(b.ID); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("Get(pruned) = %v; want ledger.ErrNotFound", err)
	}
	if _, err := s.Claim("tick", ledger.ClaimOptions{Owner: Self(t), Instant: t1}); !errors.Is(err, ledger.ErrRefused) {
		t.Fatalf("Claim(pruned completed instant) = %v; want ledger.ErrRefused", err)
	}
	// A claimed holder whose owner is dead is abandoned, so the instant is free.
	t3 := t1.Add(time.Hour)
	dead := MustClaim(t, s, "tick", ledger.ClaimOptions{Owner: DeadOwner(t), Instant: t3})
	MustClaim(t, s, "tick", ledger.ClaimOptions{Instant: t3})
	if r, _ := s.Get(dead.ID); r.Status != ledger.Abandoned {
		t.Fatalf("dead holder status = %s; want abandoned", r.Status)
	}
}

func testClaimExclusive(t *testing.T, h Harness) {
	s := h.open(t, nil)
	a := MustClaim(t, s, "x", ledger.ClaimOptions{Exclusive: true})
	_, err := s.Claim("x", ledger.ClaimOptions{Owner: Self(t), Exclusive: true})
	if !errors.Is(err, ledger.ErrRefused) || !strings.Contains(err.Error(), a.ID) {
		t.Fatalf("Claim(exclusive, live owner) = %v; want refusal naming %s", err, a.ID)
	}
	MustClaim(t, s, "y", ledger.ClaimOptions{Exclusive: true}) // another job
	Must(t)(s.Start(a.ID, nil))
	if _, err := s.Claim("x", ledger.ClaimOptions{Owner: Self(t), Exclusive: true}); !errors.Is(err, ledger.ErrRefused) {
		t.Fatalf("Claim(exclusive, running) = %v; want ledger.ErrRefused", err)
	}
	Must(t)(s.Finish(a.ID, ledger.Completed, nil, ""))
	b := MustClaim(t, s, "x", ledger.ClaimOptions{Exclusive: true, Owner: ExitedOwner(t)})
	Must(t)(s.Start(b.ID, nil))
	// b's owner is dead: it is recovered as unknown and the claim proceeds.
	MustClaim(t, s, "x", ledger.ClaimOptions{Exclusive: true})
	if r, _ := s.Get(b.ID); r.Status != ledger.Unknown || !strings.Contains(r.Error, ledger.UnknownSideEffects) {
		t.Fatalf("dead running execution = %s %q; want unknown with %q", r.Status, r.Error, ledger.UnknownSideEffects)
	}
}

// testClaimStarted: a claim with its payload already held at its gate is
// claimed, started and has its child recorded in one update; the checks of
// an ordinary claim still apply to it.
func testClaimStarted(t *testing.T, h Harness) {
	s := h.open(t, nil)
	child := proc.Self()
	r := MustClaim(t, s, "x", ledger.ClaimOptions{Exclusive: true, Child: child})
	got, err := s.Get(r.ID)
	if err != nil || got.Status != ledger.Running || got.Child != child || !got.StartedAt.Equal(got.ClaimedAt) {
		t.Fatalf("Claim(child %v) = %s child %v started %v claimed %v, %v; want running with that child, started when claimed",
			child, got.Status, got.Child, got.StartedAt, got.ClaimedAt, err)
	}
	if _, err := s.Claim("x", ledger.ClaimOptions{Owner: Self(t), Exclusive: true, Child: child}); !errors.Is(err, ledger.ErrRefused) {
		t.Fatalf("Claim(exclusive, child, running) = %v; want ledger.ErrRefused", err)
	}
	if _, err := s.Claim("x", ledger.ClaimOptions{Owner: Self(t), Child: proc.ID{PID: -1}}); !errors.Is(err, ledger.ErrBadInput) {
		t.Fatalf("Claim(child -1) = %v; want ledger.ErrBadInput", err)
	}
}

func testRecover(t *testing.T, h Harness) {
	now := time.Now()
	s := h.open(t, func() time.Time { return now })
	me := Self(t)
	if me.PIDNS == 0 {
		t.Fatalf("LocalOwner(self) = %+v; want its PID namespace", me)
	}
	other := me
	other.Host, other.BootID = "elsewhere", "00000000-0000-0000-0000-0000000000e1"
	noBoot := me
	noBoot.BootID = ""
	exited := ExitedOwner(t)
	// The same boot and PID namespace under another host name: this
	// machine before it was renamed, so the owner is judged.
	renamed := exited
	renamed.Host = "old-name"
	// A record written before PID namespaces were recorded: judged as of
	// this namespace, as the version that wrote it did.
	legacy := exited
	legacy.PIDNS = 0

	alive := MustClaim(t, s, "j", ledger.ClaimOptions{})
	remote := MustClaim(t, s, "j", ledger.ClaimOptions{Owner: other})
	unreadable := MustClaim(t, s, "j", ledger.ClaimOptions{Owner: noBoot})
	abandoned := MustClaim(t, s, "j", ledger.ClaimOptions{Owner: exited})
	unknown := MustClaim(t, s, "j", ledger.ClaimOptions{Owner: exited})
	Must(t)(s.Start(unknown.ID, nil))
	withChild := MustClaim(t, s, "j", ledger.ClaimOptions{Owner: exited})
	Must(t)(s.Start(withChild.ID, nil))
	Must(t)(s.SetChild(withChild.ID, me.ID())) // the child is alive
	fenced := MustClaim(t, s, "j", ledger.ClaimOptions{Owner: exited})
	Must(t)(s.Fence(fenced.ID))
	renamedRun := MustClaim(t, s, "j", ledger.ClaimOptions{Owner: renamed})
	Must(t)(s.Start(renamedRun.ID, nil))
	legacyClaim := MustClaim(t, s, "j", ledger.ClaimOptions{Owner: legacy})

	got, err := s.Recover(30 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]ledger.Status{}
	for _, r := range got {
		ids[r.ID] = r.Status
	}
	want := map[string]ledger.Status{abandoned.ID: ledger.Abandoned, unknown.ID: ledger.Unknown, renamedRun.ID: ledger.Unknown, legacyClaim.ID: ledger.Abandoned}
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
	if err != nil || len(got) != 1 || got[0].ID != fenced.ID || got[0].Status != ledger.Abandoned {
		t.Fatalf("Recover after grace = %v, %v; want %s abandoned", got, err, fenced.ID)
	}
	if r, _ := s.Get(unknown.ID); !strings.Contains(r.Error, ledger.UnknownSideEffects) {
		t.Errorf("unknown error = %q; want it to contain %q", r.Error, ledger.UnknownSideEffects)
	}
	// Nothing left to do: recovery is idempotent.
	if got, err := s.Recover(time.Second); err != nil || len(got) != 0 {
		t.Fatalf("second Recover = %v, %v; want nothing", got, err)
	}
}

func testLatest(t *testing.T, h Harness) {
	s := h.open(t, nil)
	if _, err := s.Latest("none"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("Latest(no job) = %v; want ledger.ErrNotFound", err)
	}
	var last ledger.Record
	for i := 0; i < 5; i++ {
		last = MustClaim(t, s, "j", ledger.ClaimOptions{})
	}
	MustClaim(t, s, "k", ledger.ClaimOptions{})
	check := func(what, want string) {
		t.Helper()
		r, err := s.Latest("j")
		if err != nil || r.ID != want {
			t.Fatalf("Latest after %s = %s, %v; want %s", what, r.ID, err, want)
		}
	}
	check("claims", last.ID)
}

func testPrune(t *testing.T, h Harness) {
	now := time.Now()
	s := h.open(t, func() time.Time { return now })
	var done []string
	for i := 0; i < 5; i++ {
		r := MustClaim(t, s, "j", ledger.ClaimOptions{})
		Must(t)(s.Finish(r.ID, ledger.Failed, nil, ""))
		done = append(done, r.ID)
		now = now.Add(time.Hour)
	}
	open := MustClaim(t, s, "j", ledger.ClaimOptions{})
	other := MustClaim(t, s, "k", ledger.ClaimOptions{})
	Must(t)(s.Finish(other.ID, ledger.Failed, nil, ""))

	got, err := ledger.Pruned(s, ledger.PruneOptions{Keep: 3})
	if err != nil || len(got) != 2 || got[0].ID != done[0] || got[1].ID != done[1] {
		t.Fatalf("Prune(keep 3) = %v, %v; want %v", got, err, done[:2])
	}
	// Older than 150 minutes: only done[2], finished 3h ago.
	got, err = ledger.Pruned(s, ledger.PruneOptions{OlderThan: 150 * time.Minute})
	if err != nil || len(got) != 1 || got[0].ID != done[2] {
		t.Fatalf("Prune(older than 150m) = %v, %v; want %v", got, err, done[2])
	}
	got, err = ledger.Pruned(s, ledger.PruneOptions{})
	if err != nil || len(got) != 3 {
		t.Fatalf("Prune() = %v, %v; want 3 records", got, err)
	}
	list, err := ledger.List(s, ledger.Filter{})
	if err != nil || len(list) != 1 || list[0].ID != open.ID {
		t.Fatalf("List after prune = %v, %v; want only the open claim", list, err)
	}
	if r, err := s.Latest("j"); err != nil || r.ID != open.ID {
		t.Fatalf("Latest(j) after prune = %v, %v; want %s", r.ID, err, open.ID)
	}
	if _, err := s.Latest("k"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("Latest(k) after prune = %v; want ledger.ErrNotFound", err)
	}
}

// testRaceGoroutines has 100 goroutines race for one adopt and for one
// (job, instant) claim: exactly one of each wins.
func testRaceGoroutines(t *testing.T, h Harness) {
	s := h.open(t, nil)
	me := Self(t)
	id := MakeState(t, s, "fenced")
	instant := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	var mu sync.Mutex
	adopted, claimed := 0, 0
	for i := 0; i < 100; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			// Each goroutine opens its own store, as separate processes would.
			st := h.reopen(t, s)
			if st == nil {
				return
			}
			if h.Reopen != nil {
				defer st.Close()
			}
			_, err := st.Adopt(id, me)
			if err != nil && !errors.Is(err, ledger.ErrRefused) {
				t.Errorf("Adopt = %v", err)
			}
			mu.Lock()
			adopted += map[bool]int{true: 1}[err == nil]
			mu.Unlock()
		}()
		go func() {
			defer wg.Done()
			_, err := s.Claim("tick", ledger.ClaimOptions{Owner: me, Instant: instant})
			if err != nil && !errors.Is(err, ledger.ErrRefused) {
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
	if list, _ := ledger.List(s, ledger.Filter{Job: "tick"}); len(list) != 1 {
		t.Fatalf("List(tick) = %d records; want 1", len(list))
	}
}
