package report

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/filestore"
	"github.com/tether-sh/tether/lib/proc"
)

// openStore opens a file store for t, closed at its end, and returns it
// with this process as an owner.
func openStore(t *testing.T) (*filestore.Store, ledger.Owner) {
	t.Helper()
	st, err := filestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	me, err := ledger.LocalOwner(proc.Self())
	if err != nil {
		t.Fatal(err)
	}
	return st, me
}

// TestCollect: a job's newest Runs executions, its live ones, its newest
// failure and the tail of its output, read through the Ledger contract.
func TestCollect(t *testing.T) {
	st, me := openStore(t)
	run := func(job string, status ledger.Status, out string) string {
		t.Helper()
		r, err := st.Claim(job, ledger.ClaimOptions{Owner: me})
		if err != nil {
			t.Fatal(err)
		}
		if status == ledger.Claimed {
			return r.ID
		}
		if _, err := st.Start(r.ID, nil); err != nil {
			t.Fatal(err)
		}
		if out != "" {
			w, err := st.OpenOutput(r.ID, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			w.Write([]byte(out))
			w.Close()
		}
		if status == ledger.Running {
			return r.ID
		}
		code := 0
		if status == ledger.Failed {
			code = 1
		}
		if _, err := st.Finish(r.ID, status, &code, ""); err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	old := run("a", ledger.Claimed, "")
	var ids []string
	for i := range 7 {
		st := ledger.Completed
		if i == 1 || i == 5 {
			st = ledger.Failed
		}
		ids = append(ids, run("a", st, strings.Repeat("0123456789", 10)+"end "+string(rune('0'+i))))
	}
	live := run("a", ledger.Running, "")
	run("b", ledger.Completed, "")

	p, err := Collect(st, []string{"a", "b", "nosuch"}, Options{Runs: 3, Tail: 8})
	if err != nil {
		t.Fatalf("Collect = %v", err)
	}
	if len(p.Jobs) != 3 {
		t.Fatalf("Collect(a, b, nosuch) = %d jobs; want 3", len(p.Jobs))
	}
	a := p.Jobs[0]
	var recent []string
	for _, r := range a.Recent {
		recent = append(recent, r.ID)
	}
	if want := []string{ids[5], ids[6], live}; strings.Join(recent, " ") != strings.Join(want, " ") {
		t.Errorf("Collect(Runs 3): a's recent = %v; want %v (the newest 3, oldest first)", recent, want)
	}
	// Every live one, however old.
	if len(a.Live) != 2 || a.Live[0].ID != old || a.Live[1].ID != live {
		t.Errorf("Collect: a's live = %v; want %s, %s", a.Live, old, live)
	}
	// The newest failure of the newest 3; its last 8 bytes.
	if a.Failure.ID != ids[5] {
		t.Errorf("Collect: a's failure = %s; want %s (the newest failed)", a.Failure.ID, ids[5])
	}
	// 105 bytes kept: 97 skipped, 8 shown.
	if got := string(a.Output.Bytes); got != "789end 5" || a.Output.Skipped != 97 {
		t.Errorf("Collect(Tail 8): a's output = %q, %d skipped; want %q, 97", got, a.Output.Skipped, "789end 5")
	}
	if b := p.Jobs[1]; b.Failure.ID != "" || len(b.Recent) != 1 || b.Output.Missing != "" {
		t.Errorf("Collect: b = failure %q, %d recent, missing %q; want none, 1, none", b.Failure.ID, len(b.Recent), b.Output.Missing)
	}
	if n := p.Jobs[2]; n.Summary.Job != "nosuch" || len(n.Recent) != 0 {
		t.Errorf("Collect: nosuch = %q with %d recent; want a job with nothing", n.Summary.Job, len(n.Recent))
	}
	if p.Store != st.Location() || p.Runs != 3 {
		t.Errorf("Collect: store %q, runs %d; want %q, 3", p.Store, p.Runs, st.Location())
	}

	// A failure that kept nothing says so.
	run("c", ledger.Failed, "")
	p, err = Collect(st, []string{"c"}, Options{})
	if err != nil || !strings.HasPrefix(p.Jobs[0].Output.Missing, "no output was kept") {
		t.Errorf("Collect(c) = missing %q, %v; want no output was kept, nil", p.Jobs[0].Output.Missing, err)
	}
}

// TestLeaves: errors.Join's parts are lines of their own; an error with
// causes and its own message is one.
func TestLeaves(t *testing.T) {
	one := ledger.OutputLostf("x")
	joined := errors.Join(errors.New("a"), errors.Join(errors.New("b"), one))
	got := strings.Join(leaves(joined), "|")
	if want := "a|b|" + one.Error(); got != want {
		t.Errorf("leaves(%q) = %q; want %q", joined, got, want)
	}
}

// TestDueOf: the slot due after the newest run's slot (past, for a late
// job), and the one after it; an @every's period after the newest run's
// start; a live hand claim's job keeps its newest finished run's
// schedule; none for no schedule or one that does not read.
func TestDueOf(t *testing.T) {
	slot := time.Date(2026, 12, 4, 2, 0, 0, 0, time.UTC)
	started := slot.Add(time.Second)
	day := 24 * time.Hour
	for _, c := range []struct {
		name       string
		s          ledger.Summary
		sched      string
		next, then time.Time
	}{
		{"cron, late", ledger.Summary{Latest: ledger.Record{ID: "x", Status: ledger.Completed, Schedule: "CRON_TZ=UTC 0 2 * * *", Instant: slot, StartedAt: started}},
			"CRON_TZ=UTC 0 2 * * *", slot.Add(day), slot.Add(2 * day)},
		{"every", ledger.Summary{Latest: ledger.Record{ID: "x", Status: ledger.Completed, Schedule: "@every 24h0m0s", ClaimedAt: started, StartedAt: started}},
			"@every 24h0m0s", started.Add(day), started.Add(2 * day)},
		{"hand claim", ledger.Summary{Latest: ledger.Record{ID: "y", Status: ledger.Running, ClaimedAt: started, StartedAt: started},
			LastFinished: ledger.Record{ID: "x", Status: ledger.Completed, Schedule: "CRON_TZ=UTC 0 2 * * *", Instant: slot}},
			"CRON_TZ=UTC 0 2 * * *", time.Date(2026, 12, 5, 2, 0, 0, 0, time.UTC), time.Date(2026, 12, 6, 2, 0, 0, 0, time.UTC)},
		{"none", ledger.Summary{Latest: ledger.Record{ID: "x", Status: ledger.Completed, StartedAt: started}}, "", time.Time{}, time.Time{}},
		{"unreadable", ledger.Summary{Latest: ledger.Record{ID: "x", Status: ledger.Completed, Schedule: "CRON_TZ=Nowhere/Nothing 0 2 * * *", StartedAt: started}},
			"CRON_TZ=Nowhere/Nothing 0 2 * * *", time.Time{}, time.Time{}},
	} {
		d := DueOf(c.s)
		if d.Schedule != c.sched || !d.Next.Equal(c.next) || !d.After.Equal(c.then) {
			t.Errorf("DueOf(%s) = %q, %v, %v; want %q, %v, %v", c.name, d.Schedule, d.Next, d.After, c.sched, c.next, c.then)
		}
	}
}

// failingEach is a store whose walks of job "bad" fail after passing one
// record, as a store with an unreadable record does.
type failingEach struct{ ledger.Ledger }

func (f failingEach) Each(flt ledger.Filter, fn func(ledger.Record) error) error {
	if flt.Job != "bad" {
		return f.Ledger.Each(flt, fn)
	}
	if err := f.Ledger.Each(flt, fn); err != nil {
		return err
	}
	return fmt.Errorf("%w: job bad: a frame is damaged", ledger.ErrCorrupt)
}

// TestCollectProblems: what cannot be read is on the page and in the
// error, and the rest of the page is there.
func TestCollectProblems(t *testing.T) {
	st, me := openStore(t)
	for _, job := range []string{"bad", "good"} {
		if _, err := st.Claim(job, ledger.ClaimOptions{Owner: me}); err != nil {
			t.Fatal(err)
		}
	}
	p, err := Collect(failingEach{st}, nil, Options{})
	if !errors.Is(err, ledger.ErrCorrupt) {
		t.Fatalf("Collect = %v; want ErrCorrupt", err)
	}
	if p == nil || len(p.Jobs) != 2 || len(p.Jobs[0].Recent) != 1 || len(p.Jobs[1].Recent) != 1 {
		t.Fatalf("Collect = %+v; want both jobs, with what could be read", p)
	}
	// Three walks of bad fail (newest, claimed, running): one line.
	want := "corrupt store: job bad: a frame is damaged"
	if len(p.Problems) != 1 || p.Problems[0] != want {
		t.Errorf("Collect: problems %q; want [%q]", p.Problems, want)
	}
}
