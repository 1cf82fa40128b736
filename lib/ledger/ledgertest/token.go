package ledgertest

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
)

// testToken: every claim of a job gets a fencing token greater than any
// earlier claim of the job was given (takeovers after recovery, claims of
// an instant, exclusive and started claims alike), every read returns it,
// and neither prune (every execution of the job gone), recovery nor
// another handle on the store gives one again.
func testToken(t *testing.T, h Harness) {
	s := h.open(t, nil)
	last := uint64(0)
	next := func(what string, r ledger.Record) {
		t.Helper()
		if r.Token <= last {
			t.Fatalf("%s: token %d; want more than %d, the last one given", what, r.Token, last)
		}
		for _, read := range []func() (ledger.Record, error){
			func() (ledger.Record, error) { return s.Get(r.ID) },
			func() (ledger.Record, error) { return s.Latest(r.Job) },
		} {
			if got, err := read(); err != nil || got.Token != r.Token {
				t.Fatalf("%s: read back token %d, %v; want %d", what, got.Token, err, r.Token)
			}
		}
		last = r.Token
	}
	r := MustClaim(t, s, "j", ledger.ClaimOptions{})
	next("first claim", r)
	Must(t)(s.Finish(r.ID, ledger.Failed, nil, ""))
	other := MustClaim(t, s, "k", ledger.ClaimOptions{})
	if other.Token == 0 {
		t.Fatalf("claim of another job: token 0; want one")
	}
	r = MustClaim(t, s, "j", ledger.ClaimOptions{Instant: time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)})
	next("claim of an instant", r)
	Must(t)(s.Start(r.ID, nil))
	code := 0
	Must(t)(s.Finish(r.ID, ledger.Completed, &code, ""))

	// A takeover: the dead owner's claim is recovered by the exclusive
	// claim that then takes the job.
	dead := MustClaim(t, s, "j", ledger.ClaimOptions{Owner: DeadOwner(t)})
	next("claim of a dead owner", dead)
	r = MustClaim(t, s, "j", ledger.ClaimOptions{Exclusive: true})
	next("exclusive claim after recovery", r)
	if got := Must(t)(s.Get(dead.ID)); !got.Status.Terminal() || got.Token != dead.Token {
		t.Fatalf("recovered execution: %s, token %d; want terminal, token %d", got.Status, got.Token, dead.Token)
	}
	Must(t)(s.Finish(r.ID, ledger.Failed, nil, ""))

	// Prune every execution of the job: the next claim still gets more.
	if _, err := s.Prune(ledger.PruneOptions{Job: "j"}, nil); err != nil {
		t.Fatal(err)
	}
	if list, err := ledger.List(s, ledger.Filter{Job: "j"}); err != nil || len(list) != 0 {
		t.Fatalf("List(j) after prune = %v, %v; want none", list, err)
	}
	s2 := h.reopen(t, s)
	if s2 == nil {
		return
	}
	r = MustClaim(t, s2, "j", ledger.ClaimOptions{})
	next("claim after prune, another handle", r)

	// Prune with a live execution kept, twice over: still more.
	Must(t)(s.Finish(r.ID, ledger.Failed, nil, ""))
	live := MustClaim(t, s, "j", ledger.ClaimOptions{})
	next("claim before a prune", live)
	for range 2 {
		if _, err := s.Prune(ledger.PruneOptions{Job: "j"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	r = MustClaim(t, s, "j", ledger.ClaimOptions{})
	next("claim after a prune that kept one", r)

	// Claims racing on other handles: each token once.
	var mu sync.Mutex
	seen := map[uint64]string{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := h.reopen(t, s)
			if st == nil {
				return
			}
			for range 3 {
				o := ledger.ClaimOptions{Owner: Self(t)}
				r, err := st.Claim("race", o)
				if err != nil {
					t.Errorf("Claim(race) = %v", err)
					return
				}
				mu.Lock()
				if id, dup := seen[r.Token]; dup || r.Token == 0 {
					t.Errorf("Claim(race) = %s with token %d; %s had it", r.ID, r.Token, id)
				}
				seen[r.Token] = r.ID
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// testHolds: an execution holds its job while it is live, its owner alive
// and no claim of its job was given a greater token; not once it ended,
// a newer claim was made, or its owner is gone.
func testHolds(t *testing.T, h Harness) {
	s := h.open(t, nil)
	old := MustClaim(t, s, "j", ledger.ClaimOptions{})
	if r, err := s.Holds(old.ID); err != nil || r.ID != old.ID {
		t.Fatalf("Holds(live claim) = %s, %v; want it, nil", r.ID, err)
	}
	newer := MustClaim(t, s, "j", ledger.ClaimOptions{})
	if _, err := s.Holds(old.ID); !errors.Is(err, ledger.ErrRefused) || !strings.Contains(err.Error(), "a newer claim") {
		t.Errorf("Holds(claim with a newer one) = %v; want a refusal naming the newer claim", err)
	}
	Must(t)(s.Start(newer.ID, nil))
	if _, err := s.Holds(newer.ID); err != nil {
		t.Errorf("Holds(running) = %v; want nil", err)
	}
	Must(t)(s.Finish(newer.ID, ledger.Failed, nil, ""))
	if _, err := s.Holds(newer.ID); !errors.Is(err, ledger.ErrRefused) || !strings.Contains(err.Error(), "is failed") {
		t.Errorf("Holds(failed) = %v; want a refusal saying it failed", err)
	}
	dead := MustClaim(t, s, "k", ledger.ClaimOptions{Owner: ExitedOwner(t)})
	if _, err := s.Holds(dead.ID); !errors.Is(err, ledger.ErrRefused) || !strings.Contains(err.Error(), "is gone") {
		t.Errorf("Holds(claim of an exited owner) = %v; want a refusal saying its owner is gone", err)
	}
	if _, err := s.Holds("0dn7yrqdrcn2j-shf3lc"); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Holds(no such id) = %v; want ErrNotFound", err)
	}
	// Every claim of the job pruned but a live one: the header's token
	// still counts.
	live := MustClaim(t, s, "p", ledger.ClaimOptions{})
	later := MustClaim(t, s, "p", ledger.ClaimOptions{})
	Must(t)(s.Finish(later.ID, ledger.Failed, nil, ""))
	if _, err := s.Prune(ledger.PruneOptions{Job: "p"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Holds(live.ID); !errors.Is(err, ledger.ErrRefused) {
		t.Errorf("Holds(live claim whose newer one was pruned) = %v; want a refusal", err)
	}
}
