package ledgertest

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/proc"
)

// testSummaries checks each job's summary through claims, finishes,
// recovery and prune: Runs counts what finished and never decreases.
func testSummaries(t *testing.T, h Harness) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	s := h.open(t, func() time.Time { return now })
	if got, err := s.Summaries(); err != nil || len(got) != 0 {
		t.Fatalf("Summaries() of an empty store = %v, %v; want none", got, err)
	}
	if got, err := s.Summaries("nothing"); err != nil || len(got) != 1 || got[0].Job != "nothing" ||
		got[0].Latest.ID != "" || got[0].LastFinished.ID != "" || got[0].LastSuccess.ID != "" ||
		got[0].Live != 0 || len(got[0].Runs) != 0 {
		t.Fatalf("Summaries(nothing) = %+v, %v; want one with only Job set", got, err)
	}
	if _, err := s.Summaries("bad/name"); !errors.Is(err, ledger.ErrBadInput) {
		t.Fatalf("Summaries(bad/name) = %v; want ledger.ErrBadInput", err)
	}
	code := 0
	tick := func() { now = now.Add(time.Second) }
	ok1 := MustClaim(t, s, "b", ledger.ClaimOptions{})
	Must(t)(s.Start(ok1.ID, nil))
	tick()
	Must(t)(s.Finish(ok1.ID, ledger.Completed, &code, ""))
	tick()
	bad := MustClaim(t, s, "b", ledger.ClaimOptions{})
	tick()
	Must(t)(s.Finish(bad.ID, ledger.Failed, nil, "x"))
	tick()
	gone := MustClaim(t, s, "b", ledger.ClaimOptions{Owner: DeadOwner(t)})
	tick()
	if _, err := s.RecoverOne(gone.ID); err != nil {
		t.Fatal(err)
	}
	tick()
	live := MustClaim(t, s, "b", ledger.ClaimOptions{})
	Must(t)(s.Start(live.ID, nil))
	other := MustClaim(t, s, "a", ledger.ClaimOptions{})

	check := func(when string) {
		t.Helper()
		got, err := s.Summaries()
		if err != nil || len(got) != 2 || got[0].Job != "a" || got[1].Job != "b" {
			t.Fatalf("%s: Summaries() = %+v, %v; want a, b", when, got, err)
		}
		a, b := got[0], got[1]
		if a.Latest.ID != other.ID || a.Live != 1 || a.LastFinished.ID != "" || a.LastSuccess.ID != "" || len(a.Runs) != 0 {
			t.Errorf("%s: summary of a = %+v; want latest %s, 1 live, nothing finished", when, a, other.ID)
		}
		if b.Latest.ID != live.ID || b.Latest.Status != ledger.Running || b.Live != 1 {
			t.Errorf("%s: summary of b: latest %s %s, %d live; want %s running, 1 live", when, b.Latest.ID, b.Latest.Status, b.Live, live.ID)
		}
		if b.LastFinished.ID != gone.ID || b.LastFinished.Status != ledger.Abandoned {
			t.Errorf("%s: LastFinished of b = %s %s; want %s abandoned", when, b.LastFinished.ID, b.LastFinished.Status, gone.ID)
		}
		if b.LastSuccess.ID != ok1.ID || b.LastSuccess.Status != ledger.Completed || !b.LastSuccess.FinishedAt.Equal(ok1.ClaimedAt.Add(time.Second)) {
			t.Errorf("%s: LastSuccess of b = %+v; want %s completed a second after its claim", when, b.LastSuccess, ok1.ID)
		}
		want := map[ledger.Status]uint64{ledger.Completed: 1, ledger.Failed: 1, ledger.Abandoned: 1}
		for _, st := range ledger.Statuses {
			if b.Runs[st] != want[st] {
				t.Errorf("%s: Runs[%s] of b = %d; want %d", when, st, b.Runs[st], want[st])
			}
		}
	}
	check("before prune")
	named, err := s.Summaries("b", "a")
	if err != nil || len(named) != 2 || named[0].Job != "a" || named[1].Job != "b" {
		t.Fatalf("Summaries(b, a) = %+v, %v; want a, b in order", named, err)
	}
	if got, err := ledger.Pruned(s, ledger.PruneOptions{}); err != nil || len(got) != 3 {
		t.Fatalf("Prune() = %v, %v; want 3 records", got, err)
	}
	got, err := s.Summaries("b")
	if err != nil || len(got) != 1 {
		t.Fatalf("Summaries(b) after prune = %+v, %v", got, err)
	}
	b := got[0]
	if b.Runs[ledger.Completed] != 1 || b.Runs[ledger.Failed] != 1 || b.Runs[ledger.Abandoned] != 1 {
		t.Errorf("Runs of b after prune = %v; want the counts unchanged", b.Runs)
	}
	if b.Latest.ID != live.ID || b.Live != 1 {
		t.Errorf("summary of b after prune: latest %s, %d live; want %s, 1", b.Latest.ID, b.Live, live.ID)
	}
	// A second prune counts nothing twice.
	Must(t)(s.Finish(live.ID, ledger.Completed, &code, ""))
	if _, err := ledger.Pruned(s, ledger.PruneOptions{}); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Summaries("b")
	if b := got[0]; b.Runs[ledger.Completed] != 2 || b.Runs[ledger.Failed] != 1 || b.Live != 0 {
		t.Errorf("summary of b after a second prune = %+v; want 2 completed, 1 failed, none live", b)
	}
}

// testOutput keeps the tail of an execution's output and deletes it with
// the pruned execution.
func testOutput(t *testing.T, h Harness) {
	s := h.open(t, nil)
	r := MustClaim(t, s, "j", ledger.ClaimOptions{})
	if _, err := readOutput(s, r.ID); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("Output before any = %v; want ledger.ErrNotFound", err)
	}
	if _, err := s.OpenOutput("0000000000000-nothere", 10); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("OpenOutput(unknown id) = %v; want ledger.ErrNotFound", err)
	}
	w, err := s.OpenOutput(r.ID, 100)
	if err != nil {
		t.Fatalf("OpenOutput = %v", err)
	}
	var all bytes.Buffer
	for i := 0; i < 50; i++ {
		line := strings.Repeat(string(rune('a'+i%26)), i%13) + "\n"
		all.WriteString(line)
		if n, err := io.WriteString(w, line); err != nil || n != len(line) {
			t.Fatalf("Write #%d = %d, %v", i, n, err)
		}
		// Every write is kept before it returns, the writer still open.
		got, err := readOutput(s, r.ID)
		want := all.Bytes()
		if len(want) > 100 {
			want = want[len(want)-100:]
		}
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("Output after write #%d = %q, %v; want %q", i, got, err, want)
		}
	}
	big := bytes.Repeat([]byte("x"), 250)
	if _, err := w.Write(big); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := readOutput(s, r.ID); err != nil || !bytes.Equal(got, big[:100]) {
		t.Fatalf("Output after a write larger than the limit = %q, %v; want 100 x", got, err)
	}
	if r2, err := readOutput(h.reopen(t, s), r.ID); err != nil || len(r2) != 100 {
		t.Fatalf("Output from another handle = %d bytes, %v; want 100", len(r2), err)
	}
	Must(t)(s.Finish(r.ID, ledger.Failed, nil, "x"))
	if _, err := ledger.Pruned(s, ledger.PruneOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := readOutput(s, r.ID); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("Output after prune = %v; want ledger.ErrNotFound", err)
	}
}

// testClaimEvery refuses a claim with Every while the job is live or
// completed within the period, with an error that is both ErrNotDue and
// ErrRefused.
func testClaimEvery(t *testing.T, h Harness) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	s := h.open(t, func() time.Time { return now })
	every := ledger.ClaimOptions{Every: time.Hour}
	if _, err := s.Claim("j", ledger.ClaimOptions{Owner: Self(t), Every: -time.Second}); !errors.Is(err, ledger.ErrBadInput) {
		t.Fatalf("Claim(Every -1s) = %v; want ledger.ErrBadInput", err)
	}
	first := MustClaim(t, s, "j", every)
	notDue := func(when string) {
		t.Helper()
		r, err := s.Claim("j", ledger.ClaimOptions{Owner: Self(t), Every: time.Hour})
		if !errors.Is(err, ledger.ErrNotDue) || !errors.Is(err, ledger.ErrRefused) {
			t.Fatalf("%s: Claim(Every 1h) = %v, %v; want ledger.ErrNotDue and ledger.ErrRefused", when, r.ID, err)
		}
	}
	notDue("while claimed")
	Must(t)(s.Start(first.ID, nil))
	notDue("while running")
	code := 1
	Must(t)(s.Finish(first.ID, ledger.Failed, &code, ""))
	// A failure does not use up the period.
	second := MustClaim(t, s, "j", every)
	Must(t)(s.Start(second.ID, nil))
	now = now.Add(10 * time.Minute)
	code = 0
	Must(t)(s.Finish(second.ID, ledger.Completed, &code, ""))
	// The period counts from the start of the last success, not its
	// finish: 59 minutes after the start is not due, 60 minutes is.
	now = now.Add(49 * time.Minute)
	notDue("59 minutes after starting")
	// Other jobs, and claims without Every, are not held back.
	MustClaim(t, s, "k", every)
	plain := MustClaim(t, s, "j", ledger.ClaimOptions{})
	Must(t)(s.Finish(plain.ID, ledger.Failed, nil, "x"))
	now = now.Add(time.Minute)
	third := MustClaim(t, s, "j", every)
	// A live execution whose owner died is recovered, not waited for.
	Must(t)(s.Finish(third.ID, ledger.Failed, nil, "x"))
	MustClaim(t, s, "d", ledger.ClaimOptions{Owner: DeadOwner(t)})
	if _, err := s.Claim("d", ledger.ClaimOptions{Owner: Self(t), Every: time.Hour}); err != nil {
		t.Fatalf("Claim(Every) past a dead owner's claim = %v; want it recovered and claimed", err)
	}
}

// testClaimEveryDrift: --every 2m under a per-minute cron, ticks a
// second or two early or late and runs of 20 seconds, runs every other
// tick: 15 runs in 30 ticks. Counted from the last finish it ran every
// third (10), and an hourly line with --every 1d every 25 hours.
func testClaimEveryDrift(t *testing.T, h Harness) {
	start := time.Now().UTC().Truncate(time.Minute).Add(-time.Hour)
	now := start
	s := h.open(t, func() time.Time { return now })
	jitter := []time.Duration{0, 2 * time.Second, -time.Second, 1500 * time.Millisecond, -2 * time.Second, 300 * time.Millisecond}
	runs := 0
	code := 0
	for i := 0; i < 30; i++ {
		now = start.Add(time.Duration(i)*time.Minute + jitter[i%len(jitter)])
		r, err := s.Claim("tick", ledger.ClaimOptions{Owner: Self(t), Every: 2 * time.Minute})
		if errors.Is(err, ledger.ErrNotDue) {
			continue
		}
		if err != nil {
			t.Fatalf("tick %d: Claim(Every 2m) = %v", i, err)
		}
		runs++
		Must(t)(s.Start(r.ID, nil))
		now = now.Add(20 * time.Second)
		Must(t)(s.Finish(r.ID, ledger.Completed, &code, ""))
	}
	if runs != 15 {
		t.Errorf("Every 2m over 30 ticks a minute apart = %d runs; want 15 (no drift)", runs)
	}
}

// testPruneJob prunes one job's records only.
func testPruneJob(t *testing.T, h Harness) {
	s := h.open(t, nil)
	var js, ks []string
	for i := 0; i < 3; i++ {
		js = append(js, MakeState(t, s, "failed"))
		r := MustClaim(t, s, "k", ledger.ClaimOptions{})
		Must(t)(s.Finish(r.ID, ledger.Failed, nil, "x"))
		ks = append(ks, r.ID)
	}
	got, err := ledger.Pruned(s, ledger.PruneOptions{Job: "job", Keep: 1})
	if err != nil || len(got) != 2 || got[0].ID != js[0] || got[1].ID != js[1] {
		t.Fatalf("Prune(job, keep 1) = %v, %v; want %v", got, err, js[:2])
	}
	if list, err := ledger.List(s, ledger.Filter{Job: "k"}); err != nil || len(list) != 3 {
		t.Fatalf("List(k) after pruning job = %d records, %v; want 3", len(list), err)
	}
	if _, err := ledger.Pruned(s, ledger.PruneOptions{Job: "bad/job"}); !errors.Is(err, ledger.ErrBadInput) {
		t.Fatalf("Prune(bad/job) = %v; want ledger.ErrBadInput", err)
	}
	_ = ks
}

// testClaimStopped: a claim whose Stop is closed before it begins to
// commit changes nothing (ledger.ErrClaimStopped): its id stays unknown,
// its instant free; an open Stop claims as usual.
func testClaimStopped(t *testing.T, h Harness) {
	s := h.open(t, nil)
	stop := make(chan struct{})
	close(stop)
	at := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	id := ledger.NewID(time.Now(), "x")
	if r, err := s.Claim("x", ledger.ClaimOptions{Owner: Self(t), Instant: at, ID: id, Child: proc.Self(), Stop: stop}); !errors.Is(err, ledger.ErrClaimStopped) {
		t.Fatalf("Claim(stopped) = %s, %v; want ledger.ErrClaimStopped", r.ID, err)
	}
	if r, err := s.Get(id); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("Get(a stopped claim's id) = %s %s, %v; want ledger.ErrNotFound", r.ID, r.Status, err)
	}
	r := MustClaim(t, s, "x", ledger.ClaimOptions{Instant: at, Stop: make(chan struct{})})
	if got, err := s.Get(r.ID); err != nil || got.Status != ledger.Claimed {
		t.Fatalf("Claim(open Stop) then Get = %s, %v; want claimed", got.Status, err)
	}
}

// readOutput reads what Output opens whole.
func readOutput(s ledger.Ledger, id string) ([]byte, error) {
	out, err := s.Output(id)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	return io.ReadAll(out)
}
