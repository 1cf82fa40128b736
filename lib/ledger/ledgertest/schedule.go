package ledgertest

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
)

// testClaimSchedule: a claim's schedule and attempt k of n are in its
// record through every later version and every way of reading it (Get,
// Latest, Each, the JSON form, --field); a claim without them has none.
func testClaimSchedule(t *testing.T, h Harness) {
	s := h.open(t, nil)
	const sched = "CRON_TZ=Europe/Berlin 0 2 * * *"
	instant := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	a := MustClaim(t, s, "nightly", ledger.ClaimOptions{Instant: instant, Schedule: sched, Attempt: 2, Attempts: 3})
	plain := MustClaim(t, s, "plain", ledger.ClaimOptions{})
	check := func(what string, r ledger.Record, schedule string, attempt, attempts int) {
		t.Helper()
		if r.Schedule != schedule || r.Attempt != attempt || r.Attempts != attempts {
			t.Errorf("%s: schedule %q attempt %d of %d; want %q %d of %d", what, r.Schedule, r.Attempt, r.Attempts, schedule, attempt, attempts)
		}
	}
	check("Claim", a, sched, 2, 3)
	check("Claim(plain)", plain, "", 0, 0)
	Must(t)(s.Start(a.ID, nil))
	Must(t)(s.Finish(a.ID, ledger.Completed, nil, ""))
	check("Get", Must(t)(s.Get(a.ID)), sched, 2, 3)
	check("Latest", Must(t)(s.Latest("nightly")), sched, 2, 3)
	check("Get(plain)", Must(t)(s.Get(plain.ID)), "", 0, 0)
	all, err := ledger.List(s, ledger.Filter{Job: "nightly"})
	if err != nil || len(all) != 1 {
		t.Fatalf("List(nightly) = %v, %v; want one", all, err)
	}
	check("Each", all[0], sched, 2, 3)

	b, err := all[0].MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var j map[string]any
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	if j["schedule"] != sched || j["attempt"] != 2.0 || j["attempts"] != 3.0 {
		t.Errorf("MarshalJSON = %s; want schedule %q, attempt 2, attempts 3", b, sched)
	}
	for field, want := range map[string]string{"schedule": sched, "attempt": "2", "attempts": "3"} {
		if got, err := all[0].Field(field); got != want || err != nil {
			t.Errorf("Field(%s) = %q, %v; want %q", field, got, err, want)
		}
	}
	pr := Must(t)(s.Get(plain.ID))
	b, _ = pr.MarshalJSON()
	if !strings.Contains(string(b), `"schedule":null,"attempt":null,"attempts":null`) {
		t.Errorf("MarshalJSON(plain) = %s; want schedule, attempt and attempts null", b)
	}

	for _, bad := range []ledger.ClaimOptions{
		{Schedule: strings.Repeat("x", ledger.MaxScheduleLen+1)},
		{Attempt: -1},
		{Attempts: ledger.MaxAttempts + 1},
		{Once: true}, // no instant
	} {
		bad.Owner = Self(t)
		if _, err := s.Claim("bad", bad); !errors.Is(err, ledger.ErrBadInput) {
			t.Errorf("Claim(%+v) = %v; want ledger.ErrBadInput", bad, err)
		}
	}
}

// testClaimOnce: with Once, a slot's first execution that ran is its
// only one, failed included; abandoned and never-started ones leave it
// free; a retry of the run (attempt k after attempts 1..k-1 failed) is
// let through.
func testClaimOnce(t *testing.T, h Harness) {
	s := h.open(t, nil)
	slot := time.Date(2024, 5, 1, 2, 0, 0, 0, time.UTC)
	once := func(attempt int) ledger.ClaimOptions {
		return ledger.ClaimOptions{Owner: Self(t), Instant: slot, Once: true, Attempt: attempt, Attempts: 3}
	}
	refused := func(what string, o ledger.ClaimOptions, why string) {
		t.Helper()
		_, err := s.Claim("job", o)
		if !errors.Is(err, ledger.ErrRefused) || !strings.Contains(err.Error(), why) {
			t.Fatalf("Claim(%s) = %v; want a refusal naming %q", what, err, why)
		}
	}

	// Abandoned (its owner died before it started): the slot is free.
	dead := MustClaim(t, s, "job", ledger.ClaimOptions{Owner: DeadOwner(t), Instant: slot, Once: true})
	// Failed without starting (a dispatch that failed): free as well.
	a := MustClaim(t, s, "job", once(1))
	if r := Must(t)(s.Get(dead.ID)); r.Status != ledger.Abandoned {
		t.Fatalf("dead holder = %s; want abandoned", r.Status)
	}
	Must(t)(s.Finish(a.ID, ledger.Failed, nil, "dispatch failed"))
	// The attempt that ran and failed.
	b := MustClaim(t, s, "job", once(1))
	Must(t)(s.Start(b.ID, nil))
	code := 1
	Must(t)(s.Finish(b.ID, ledger.Failed, &code, ""))
	// A later tick (attempt 1 again, or none) is refused; without Once the
	// slot may retry, as always.
	refused("once, after failed", once(1), b.ID+" is failed")
	refused("once, no attempt, after failed", ledger.ClaimOptions{Owner: Self(t), Instant: slot, Once: true}, "is failed")
	// The run's own retry goes through, and holds the slot as any claim.
	c := MustClaim(t, s, "job", once(2))
	refused("once, attempt 3, while 2 is claimed", once(3), c.ID+" is claimed")
	Must(t)(s.Start(c.ID, nil))
	Must(t)(s.Finish(c.ID, ledger.Failed, &code, ""))
	d := MustClaim(t, s, "job", once(3))
	Must(t)(s.Start(d.ID, nil))
	Must(t)(s.Finish(d.ID, ledger.Failed, &code, ""))
	// Attempt 3 failed: attempt 3 again (another tick's count) is refused.
	refused("once, attempt 3 again", once(3), "is failed")
	// Without Once, failed leaves the slot free (Instant's rule).
	e := MustClaim(t, s, "job", ledger.ClaimOptions{Instant: slot})
	Must(t)(s.Start(e.ID, nil))
	Must(t)(s.Finish(e.ID, ledger.Completed, nil, ""))
	refused("once, after completed", once(2), e.ID+" is completed")

	// Another slot of the job is its own.
	MustClaim(t, s, "job", ledger.ClaimOptions{Instant: slot.Add(time.Hour), Once: true})
}
