package ledgertest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
)

// The cases of the operations only some stores have work for (leases,
// late results, other hosts, a folder on this host): every store offers
// them, and one with nothing to do does what the seam documents.

// bound is how long an operation documented to return (KeepLease after
// its ctx is done, or its execution ended) may take before the suite
// calls it hung: generous, as a loaded machine is slow, and never waited
// out by a passing store.
const bound = 20 * time.Second

// keepLease runs s.KeepLease(ctx, id, k) in a goroutine and returns a
// channel closed when it returns.
func keepLease(ctx context.Context, s ledger.Ledger, id string, k ledger.Keep) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.KeepLease(ctx, id, k)
	}()
	return done
}

// returned fails t unless done is closed within bound.
func returned(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(bound):
		t.Fatalf("KeepLease %s did not return within %v", what, bound)
	}
}

// testKeepLease: KeepLease returns when its ctx is done (at once when it
// already is), and by itself once the execution ended; it calls Lost, once,
// only in a store that keeps leases, when the lease cannot have been
// renewed in time; a store without leases returns at once and never
// calls it.
func testKeepLease(t *testing.T, h Harness) {
	const lease = 3 * time.Second
	s := h.openLeased(t, lease)
	id := MustClaim(t, s, "job", ledger.ClaimOptions{}).ID
	Must(t)(s.Start(id, nil))
	var lost atomic.Int32
	k := ledger.Keep{Since: time.Now(), Stop: ledger.StopBudget(0), Lost: func() { lost.Add(1) }, Warn: t.Logf}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	returned(t, keepLease(ctx, s, id, k), "with its ctx done already")

	ctx, cancel = context.WithCancel(context.Background())
	done := keepLease(ctx, s, id, k)
	cancel()
	returned(t, done, "after its ctx was canceled")
	if n := lost.Load(); n != 0 {
		t.Fatalf("KeepLease of a live execution called Lost %d times; want 0", n)
	}

	// Last set an hour ago: the lease cannot have been renewed in time.
	stale := k
	stale.Since = time.Now().Add(-time.Hour)
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	returned(t, keepLease(ctx, s, id, stale), "of a lease already lost")
	want := int32(0)
	if h.OpenLeased != nil {
		want = 1
	}
	if n := lost.Load(); n != want {
		t.Errorf("KeepLease of a lease last set an hour ago called Lost %d times; want %d", n, want)
	}

	// An execution that ended has no lease to keep, ctx or not; ended by
	// someone else than the runner (whose ctx is done first), it is no
	// longer the runner's: Replaced, where the store keeps leases.
	code := 0
	Must(t)(s.Finish(id, ledger.Completed, &code, ""))
	lost.Store(0)
	var replaced atomic.Int32
	k.Since, k.Replaced = time.Now(), func() { replaced.Add(1) }
	returned(t, keepLease(ctx, s, id, k), "of an ended execution")
	if n := lost.Load(); n != 0 {
		t.Errorf("KeepLease of an ended execution called Lost %d times; want 0", n)
	}
	if n := replaced.Load(); n != want {
		t.Errorf("KeepLease of an execution ended by another called Replaced %d times; want %d", n, want)
	}
}

// testFinishRetrying: FinishRetrying is Finish for a store that is
// reachable: it records the result, and refuses a second one.
func testFinishRetrying(t *testing.T, h Harness) {
	s := h.open(t, nil)
	id := MakeState(t, s, "running")
	code := 4
	r, err := s.FinishRetrying(id, ledger.Failed, &code, "x")
	if err != nil || r.Status != ledger.Failed || r.ExitCode == nil || *r.ExitCode != 4 {
		t.Fatalf("FinishRetrying(running) = %s, %v; want failed, exit code 4", r.State(), err)
	}
	before := h.raw(t, s, id)
	if _, err := s.FinishRetrying(id, ledger.Completed, &code, ""); !errors.Is(err, ledger.ErrRefused) {
		t.Errorf("FinishRetrying(failed) = %v; want ledger.ErrRefused", err)
	}
	if after := h.raw(t, s, id); !bytes.Equal(before, after) {
		t.Errorf("a refused FinishRetrying changed the record:\n%s\n%s", before, after)
	}
}

// testLate: the late-result rule (ledger.KeepLate). A finish refused
// because recovery ended the execution keeps the result as Late, the
// status unchanged, in a store that keeps late results (Shared), the
// first one only; a store that keeps none keeps nothing and says nothing.
// A refusal of any other terminal execution is never kept.
func testLate(t *testing.T, h Harness) {
	s := h.open(t, nil)
	code := 7
	for _, state := range []string{"unknown", "abandoned"} {
		id := MakeState(t, s, state)
		rec, ferr := s.Finish(id, ledger.Failed, &code, "came late")
		if !errors.Is(ferr, ledger.ErrRefused) || !ledger.CanKeepLate(rec) {
			t.Fatalf("Finish(%s) = %s, %v; want refused, the record as recovery left it", state, rec.State(), ferr)
		}
		err := ledger.KeepLate(s, rec, ferr, id, ledger.Failed, &code, "came late")
		said := err != nil && strings.HasSuffix(err.Error(), "(the result is kept on the record as late)")
		if !errors.Is(err, ledger.ErrRefused) || said != h.Shared {
			t.Errorf("KeepLate(%s) = %v; want ledger.ErrRefused, saying it was kept: %v", state, err, h.Shared)
		}
		got := Must(t)(s.Get(id))
		if string(got.Status) != state {
			t.Errorf("after KeepLate(%s) the execution is %s; want %s still", state, got.Status, state)
		}
		switch {
		case !h.Shared && got.Late != nil:
			t.Errorf("KeepLate(%s) in a store of one host kept %+v; want nothing", state, *got.Late)
		case h.Shared && (got.Late == nil || got.Late.Status != ledger.Failed || got.Late.ExitCode == nil ||
			*got.Late.ExitCode != 7 || got.Late.Error != "came late" || got.Late.FinishedAt.IsZero()):
			t.Errorf("KeepLate(%s) kept %+v; want failed, exit code 7, \"came late\", a time", state, got.Late)
		}
		// Only the first late result is kept.
		before := h.raw(t, s, id)
		if kept, err := s.RecordLate(id, ledger.Completed, nil, "later still"); kept || err != nil {
			t.Errorf("RecordLate(%s) a second time = %v, %v; want false, nil", state, kept, err)
		}
		if after := h.raw(t, s, id); !bytes.Equal(before, after) {
			t.Errorf("a second RecordLate(%s) changed the record:\n%s\n%s", state, before, after)
		}
	}
	for _, state := range []string{"running", "completed", "failed"} {
		id := MakeState(t, s, state)
		before := h.raw(t, s, id)
		if kept, err := s.RecordLate(id, ledger.Failed, &code, "x"); kept || err != nil {
			t.Errorf("RecordLate(%s) = %v, %v; want false, nil", state, kept, err)
		}
		if after := h.raw(t, s, id); !bytes.Equal(before, after) {
			t.Errorf("RecordLate(%s) changed the record:\n%s\n%s", state, before, after)
		}
	}
	id := MakeState(t, s, "completed")
	rec, ferr := s.Finish(id, ledger.Failed, &code, "x")
	if err := ledger.KeepLate(s, rec, ferr, id, ledger.Failed, &code, "x"); err != ferr {
		t.Errorf("KeepLate(completed) = %v; want Finish's refusal as is, %v", err, ferr)
	}
	if err := ledger.KeepLate(s, ledger.Record{}, nil, id, ledger.Failed, &code, "x"); err != nil {
		t.Errorf("KeepLate(nil) = %v; want nil", err)
	}
}

// testRecoverHost: a store hosts share (Shared) ends every open execution
// owned on a host declared dead, and refuses this host; a store of one
// host refuses every host with ErrOneHost (bad input), changing nothing.
func testRecoverHost(t *testing.T, h Harness) {
	s := h.open(t, nil)
	remote := Self(t)
	remote.Host, remote.BootID = "web-2", "00000000-0000-0000-0000-0000000000e2"
	claimed := MustClaim(t, s, "j", ledger.ClaimOptions{Owner: remote}).ID
	running := MustClaim(t, s, "k", ledger.ClaimOptions{Owner: remote}).ID
	Must(t)(s.Start(running, nil))
	mine := MakeState(t, s, "running")
	me, _ := os.Hostname()
	if !h.Shared {
		before := [][]byte{h.raw(t, s, claimed), h.raw(t, s, running), h.raw(t, s, mine)}
		for _, host := range []string{"web-2", me, ""} {
			got, err := s.RecoverHost(host)
			if !errors.Is(err, ledger.ErrOneHost) || !errors.Is(err, ledger.ErrBadInput) || len(got) != 0 {
				t.Errorf("RecoverHost(%q) = %v, %v; want nothing, ledger.ErrOneHost (bad input)", host, got, err)
			}
		}
		for i, id := range []string{claimed, running, mine} {
			if after := h.raw(t, s, id); !bytes.Equal(before[i], after) {
				t.Errorf("RecoverHost changed %s:\n%s\n%s", id, before[i], after)
			}
		}
		return
	}
	for _, host := range []string{me, ""} {
		if _, err := s.RecoverHost(host); !errors.Is(err, ledger.ErrBadInput) || errors.Is(err, ledger.ErrOneHost) {
			t.Errorf("RecoverHost(%q) = %v; want ledger.ErrBadInput, not ErrOneHost", host, err)
		}
	}
	got, err := s.RecoverHost("web-2")
	if err != nil || len(got) != 2 {
		t.Fatalf("RecoverHost(web-2) = %v, %v; want its 2 open executions", got, err)
	}
	for _, r := range got {
		want := map[string]ledger.Status{claimed: ledger.Abandoned, running: ledger.Unknown}[r.ID]
		if r.Status != want {
			t.Errorf("RecoverHost(web-2): %s = %s; want %s", r.ID, r.Status, want)
		}
	}
	if r := Must(t)(s.Get(mine)); r.Status != ledger.Running {
		t.Errorf("RecoverHost(web-2) left this host's %s %s; want running", mine, r.Status)
	}
	if got, err := s.RecoverHost("web-2"); err != nil || len(got) != 0 {
		t.Errorf("RecoverHost(web-2) again = %v, %v; want nothing", got, err)
	}
}

// testHandoffDir: a store of one host hands off through a private folder
// of its own, the same on every call and handle; a store hosts share has
// none ("").
func testHandoffDir(t *testing.T, h Harness) {
	s := h.open(t, nil)
	dir, err := s.HandoffDir()
	if err != nil {
		t.Fatalf("HandoffDir() = %v", err)
	}
	if h.Shared {
		if dir != "" {
			t.Errorf("HandoffDir() of a shared store = %q; want \"\"", dir)
		}
		return
	}
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 {
		t.Fatalf("HandoffDir() = %q (%v, %v); want a private directory", dir, fi, err)
	}
	if again, err := s.HandoffDir(); again != dir || err != nil {
		t.Errorf("HandoffDir() again = %q, %v; want %q", again, err, dir)
	}
	if o := h.reopen(t, s); o != s && o != nil {
		defer o.Close()
		if other, err := o.HandoffDir(); other != dir || err != nil {
			t.Errorf("HandoffDir() of another handle = %q, %v; want %q", other, err, dir)
		}
	}
}

// testBootNote: a store of one host keeps a note for this boot; a store
// hosts share keeps none (setting one does nothing). Both refuse a
// malformed name.
func testBootNote(t *testing.T, h Harness) {
	s := h.open(t, nil)
	if _, _, err := s.BootNote("../lock"); !errors.Is(err, ledger.ErrBadInput) {
		t.Errorf("BootNote(../lock) = %v; want ledger.ErrBadInput", err)
	}
	if err := s.SetBootNote("../lock", "x"); !errors.Is(err, ledger.ErrBadInput) {
		t.Errorf("SetBootNote(../lock) = %v; want ledger.ErrBadInput", err)
	}
	if v, ok, err := s.BootNote("probe"); v != "" || ok || err != nil {
		t.Fatalf("BootNote(probe) of a new store = %q, %v, %v; want \"\", false, nil", v, ok, err)
	}
	err := s.SetBootNote("probe", "yes")
	if errors.Is(err, ledger.ErrNoBootID) && !h.Shared {
		t.Skip("this host's boot id is unknown: no boot note can be kept")
	}
	if err != nil {
		t.Fatalf("SetBootNote(probe) = %v; want nil", err)
	}
	v, ok, err := s.BootNote("probe")
	if want := !h.Shared; v != map[bool]string{true: "yes"}[want] || ok != want || err != nil {
		t.Errorf("BootNote(probe) after SetBootNote = %q, %v, %v; want kept: %v", v, ok, err, want)
	}
}
