package ledgertest

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
)

func strp(s string) *string { return &s }

// testBeat: a beat keeps the state of a claimed, fenced or running
// execution and records the time and note; it is refused, changing
// nothing, once the execution is terminal.
func testBeat(t *testing.T, h Harness) {
	now := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	s := h.open(t, func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
	for _, tc := range []struct {
		state string
		ok    bool
	}{
		{"claimed", true}, {"fenced", true}, {"running", true}, {"adopted", true},
		{"completed", false}, {"failed", false}, {"failed-unstarted", false}, {"unknown", false}, {"abandoned", false},
	} {
		id := MakeState(t, s, tc.state)
		before, _ := s.Get(id)
		raw := h.raw(t, s, id)
		mu.Lock()
		now = now.Add(time.Minute)
		at := now
		mu.Unlock()
		got, err := s.Beat(id, ledger.BeatOptions{Note: strp("step " + tc.state)})
		if !tc.ok {
			if !errors.Is(err, ledger.ErrRefused) || !strings.Contains(err.Error(), "execution is already "+before.State()) {
				t.Errorf("Beat(%s) = %v; want ErrRefused naming the state", tc.state, err)
			}
			if after := h.raw(t, s, id); !bytes.Equal(raw, after) {
				t.Errorf("Beat(%s) changed the record:\n%s\n%s", tc.state, raw, after)
			}
			continue
		}
		if err != nil {
			t.Errorf("Beat(%s) = %v; want it recorded", tc.state, err)
			continue
		}
		reread := Must(t)(s.Get(id))
		for _, r := range []ledger.Record{got, reread} {
			if r.State() != before.State() || !r.BeatAt.Equal(at) || r.Note != "step "+tc.state {
				t.Errorf("Beat(%s) = %s beat %v note %q; want %s beat %v note %q",
					tc.state, r.State(), r.BeatAt, r.Note, before.State(), at, "step "+tc.state)
			}
		}
	}
	// Without a note the last note is kept; an empty note clears it.
	id := MakeState(t, s, "running")
	Must(t)(s.Beat(id, ledger.BeatOptions{Note: strp("first")}))
	if r := Must(t)(s.Beat(id, ledger.BeatOptions{})); r.Note != "first" {
		t.Errorf("Beat(no note) note = %q; want %q kept", r.Note, "first")
	}
	if r := Must(t)(s.Beat(id, ledger.BeatOptions{Note: strp("")})); r.Note != "" || r.BeatAt.IsZero() {
		t.Errorf("Beat(empty note) = note %q beat %v; want no note, a beat", r.Note, r.BeatAt)
	}
	// A finish keeps the last beat.
	Must(t)(s.Beat(id, ledger.BeatOptions{Note: strp("last")}))
	if r := Must(t)(s.Finish(id, ledger.Completed, nil, "")); r.Note != "last" || r.BeatAt.IsZero() {
		t.Errorf("Finish after Beat = note %q beat %v; want the last beat kept", r.Note, r.BeatAt)
	}
	if _, err := s.Beat(id, ledger.BeatOptions{Note: strp(strings.Repeat("x", 1025))}); !errors.Is(err, ledger.ErrBadInput) {
		t.Errorf("Beat(1025-byte note) = %v; want ErrBadInput", err)
	}
	if _, err := s.Beat("../x", ledger.BeatOptions{}); !errors.Is(err, ledger.ErrBadID) {
		t.Errorf("Beat(bad id) = %v; want ErrBadID", err)
	}
	if _, err := s.Beat("0zzzzzzzzzzzz-zzzzzz", ledger.BeatOptions{}); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Beat(missing) = %v; want ErrNotFound", err)
	}
}

// testBeatIfLatest: with IfLatest, a beat of an execution whose job has a
// newer execution is refused, naming it; the newest may beat.
func testBeatIfLatest(t *testing.T, h Harness) {
	s := h.open(t, nil)
	old := MustClaim(t, s, "j", ledger.ClaimOptions{})
	Must(t)(s.Start(old.ID, nil))
	Must(t)(s.Beat(old.ID, ledger.BeatOptions{IfLatest: true}))
	MustClaim(t, s, "other", ledger.ClaimOptions{}) // another job is no newer execution
	Must(t)(s.Beat(old.ID, ledger.BeatOptions{IfLatest: true}))
	newer := MustClaim(t, s, "j", ledger.ClaimOptions{})
	raw := h.raw(t, s, old.ID)
	_, err := s.Beat(old.ID, ledger.BeatOptions{Note: strp("stalled:idle"), IfLatest: true})
	if !errors.Is(err, ledger.ErrRefused) || !strings.Contains(err.Error(), newer.ID) {
		t.Errorf("Beat(older, IfLatest) = %v; want ErrRefused naming %s", err, newer.ID)
	}
	if after := h.raw(t, s, old.ID); !bytes.Equal(raw, after) {
		t.Errorf("a refused Beat changed the record:\n%s\n%s", raw, after)
	}
	Must(t)(s.Beat(newer.ID, ledger.BeatOptions{IfLatest: true}))
	// Without IfLatest the older attempt may still beat.
	if r := Must(t)(s.Beat(old.ID, ledger.BeatOptions{Note: strp("still here")})); r.Note != "still here" {
		t.Errorf("Beat(older) note = %q; want %q", r.Note, "still here")
	}
}

// testBeatRace: beats racing each other and a finish lose no update: the
// finish's result stays, every beat after it is refused, and the note
// left is one a successful beat wrote.
func testBeatRace(t *testing.T, h Harness) {
	s := h.open(t, nil)
	id := MakeState(t, s, "running")
	code := 0
	var wg sync.WaitGroup
	var mu sync.Mutex
	wrote := map[string]bool{}
	finished := make(chan struct{})
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := h.reopen(t, s)
			if st == nil {
				return
			}
			if h.Reopen != nil {
				defer st.Close()
			}
			for i := 0; i < 10; i++ {
				note := fmt.Sprintf("g%d-%d", g, i)
				select {
				case <-finished:
					if _, err := st.Beat(id, ledger.BeatOptions{Note: &note}); !errors.Is(err, ledger.ErrRefused) {
						t.Errorf("Beat after Finish = %v; want ErrRefused", err)
					}
					continue
				default:
				}
				_, err := st.Beat(id, ledger.BeatOptions{Note: &note})
				switch {
				case err == nil:
					mu.Lock()
					wrote[note] = true
					mu.Unlock()
				case !errors.Is(err, ledger.ErrRefused):
					t.Errorf("Beat = %v", err)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(finished)
		Must(t)(s.Finish(id, ledger.Completed, &code, ""))
	}()
	wg.Wait()
	r := Must(t)(s.Get(id))
	if r.Status != ledger.Completed || r.ExitCode == nil || *r.ExitCode != 0 || r.FinishedAt.IsZero() {
		t.Fatalf("after racing beats, %s = %s exit %v; want completed, exit 0", id, r.Status, r.ExitCode)
	}
	if r.Note != "" && !wrote[r.Note] {
		t.Errorf("note left = %q; no successful beat wrote it", r.Note)
	}
	if len(wrote) > 0 && r.Note == "" {
		t.Errorf("note left is empty; want the last of %d successful beats", len(wrote))
	}
}
