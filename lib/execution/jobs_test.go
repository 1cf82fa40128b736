package execution

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/handoff"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/filestore"
	"github.com/tether-sh/tether/lib/proc"
)

// openStore returns an empty file store.
func openStore(t *testing.T) *filestore.Store {
	t.Helper()
	st, err := filestore.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// marker is a payload that leaves a file behind, and the file: whether it
// exists says whether the payload ran.
func marker(t *testing.T, exit int) ([]string, string) {
	path := filepath.Join(t.TempDir(), "ran")
	return []string{"sh", "-c", `echo "$TETHER_EXECUTION" > "$0"; exit "$1"`, path, string(rune('0' + exit))}, path
}

// ran reports whether the marker payload ran, and as which execution.
func ran(path string) (bool, string) {
	b, err := os.ReadFile(path)
	return err == nil, strings.TrimSpace(string(b))
}

func TestRunJob(t *testing.T) {
	instant := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	self, err := ledger.LocalOwner(proc.Self())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		// before prepares the store.
		before   func(t *testing.T, st ledger.Ledger)
		claim    Claim
		argv     []string // nil: the marker payload, exiting exit
		exit     int
		code     int
		refused  bool
		ran      bool
		status   ledger.Status // of the record; "": none made
		stderrIs string        // a substring of what was said; "": nothing
	}{
		{name: "completed", claim: Claim{Job: "job", Source: "cron"}, code: 0, ran: true, status: ledger.Completed},
		{name: "failed", claim: Claim{Job: "job"}, exit: 7, code: 7, ran: true, status: ledger.Failed},
		{name: "not found", claim: Claim{Job: "job"}, argv: []string{"/nonexistent/payload"}, code: exit.NotFound, status: ledger.Failed, stderrIs: "/nonexistent/payload"},
		{
			name: "exclusive busy",
			before: func(t *testing.T, st ledger.Ledger) {
				rec, err := st.Claim("job", ledger.ClaimOptions{Owner: self})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := st.Start(rec.ID, nil); err != nil {
					t.Fatal(err)
				}
			},
			claim: Claim{Job: "job", Exclusive: true}, code: exit.NotRun, refused: true,
		},
		{
			name: "instant taken",
			before: func(t *testing.T, st ledger.Ledger) {
				if _, err := st.Claim("job", ledger.ClaimOptions{Owner: self, Instant: instant}); err != nil {
					t.Fatal(err)
				}
			},
			claim: Claim{Job: "job", Instant: instant}, code: exit.NotRun, refused: true,
		},
		{name: "bad input", claim: Claim{Job: "job", Every: -time.Second}, code: exit.Usage, stderrIs: "negative period"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := openStore(t)
			if tt.before != nil {
				tt.before(t, st)
			}
			before, err := ledger.List(st, ledger.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			argv, path := marker(t, tt.exit)
			if tt.argv != nil {
				argv = tt.argv
			}
			warn, errb := tool()
			out := RunJob(warn, st, RunOptions{Claim: tt.claim, Options: Options{Argv: argv, Grace: time.Second}})
			if out.Code != tt.code {
				t.Errorf("RunJob().Code = %d; want %d (stderr %q)", out.Code, tt.code, errb)
			}
			if out.Err != nil {
				t.Errorf("RunJob().Err = %v; want nil", out.Err)
			}
			if got := out.Refused != nil; got != tt.refused {
				t.Errorf("RunJob().Refused = %v; want refused %v", out.Refused, tt.refused)
			} else if tt.refused {
				if !errors.Is(out.Refused, ledger.ErrRefused) || !strings.HasPrefix(out.Refused.Error(), "not running job: ") {
					t.Errorf("RunJob().Refused = %q; want \"not running job: ...\" wrapping ErrRefused", out.Refused)
				}
			}
			if tt.stderrIs == "" && errb.Len() > 0 || !strings.Contains(errb.String(), tt.stderrIs) {
				t.Errorf("stderr = %q; want %q in it", errb, tt.stderrIs)
			}
			did, as := ran(path)
			if did != tt.ran {
				t.Errorf("payload ran = %v; want %v", did, tt.ran)
			}
			after, err := ledger.List(st, ledger.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			if tt.status == "" {
				if len(after) != len(before) || out.ID != "" {
					t.Errorf("RunJob made %d records, id %q; want none", len(after)-len(before), out.ID)
				}
				return
			}
			r, err := st.Get(out.ID)
			if err != nil {
				t.Fatalf("Get(RunJob().ID %q) = %v", out.ID, err)
			}
			if r.Job != tt.claim.Job || r.Source != tt.claim.Source || r.Status != tt.status || r.ExitCode == nil || *r.ExitCode != tt.code {
				t.Errorf("record %+v; want %s of %s with %d, source %q", r, tt.status, tt.claim.Job, tt.code, tt.claim.Source)
			}
			if r.Owner.ID() != self.ID() {
				t.Errorf("record owner %v; want this process %v", r.Owner, self)
			}
			if tt.ran && (r.Child.PID == 0 || as != out.ID) {
				t.Errorf("record child %v, payload's TETHER_EXECUTION %q; want a child and %s", r.Child, as, out.ID)
			}
		})
	}
}

func TestAdopt(t *testing.T) {
	self, err := ledger.LocalOwner(proc.Self())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		fence    bool
		ack      func(dir string) string // the ack file; nil: none
		exit     int
		code     int
		ran      bool
		status   ledger.Status
		errIs    string // Outcome.Err's text holds it; "": nil
		ackWrote bool
	}{
		{name: "completed with ack", fence: true, ack: func(d string) string { return filepath.Join(d, "ack") }, code: 0, ran: true, status: ledger.Completed, ackWrote: true},
		{name: "failed without ack", fence: true, exit: 3, code: 3, ran: true, status: ledger.Failed},
		{name: "not fenced", fence: false, code: exit.NotRun, status: ledger.Claimed, errIs: "cannot adopt"},
		{
			name: "ack not writable", fence: true, ack: func(d string) string { return filepath.Join(d, "missing", "ack") },
			code: exit.NotRun, status: ledger.Failed, errIs: "cannot write ack file: ",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := openStore(t)
			rec, err := st.Claim("job", ledger.ClaimOptions{Owner: self})
			if err != nil {
				t.Fatal(err)
			}
			if tt.fence {
				if _, err := st.Fence(rec.ID); err != nil {
					t.Fatal(err)
				}
			}
			ackFile := ""
			if tt.ack != nil {
				ackFile = tt.ack(t.TempDir())
			}
			argv, path := marker(t, tt.exit)
			warn, errb := tool()
			out := Adopt(warn, st, AdoptOptions{ID: rec.ID, AckFile: ackFile, Options: Options{Argv: argv, Grace: time.Second, Keep: 1}})
			if out.Code != tt.code {
				t.Errorf("Adopt().Code = %d; want %d (stderr %q, err %v)", out.Code, tt.code, errb, out.Err)
			}
			switch {
			case tt.errIs == "" && out.Err != nil, tt.errIs != "" && (out.Err == nil || !strings.Contains(out.Err.Error(), tt.errIs)):
				t.Errorf("Adopt().Err = %v; want %q in it", out.Err, tt.errIs)
			}
			if errb.Len() > 0 {
				t.Errorf("stderr = %q; want nothing (Err is the caller's to say)", errb)
			}
			did, as := ran(path)
			if did != tt.ran || did && as != rec.ID {
				t.Errorf("payload ran = %v as %q; want %v as %s", did, as, tt.ran, rec.ID)
			}
			r, err := st.Get(rec.ID)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != tt.status {
				t.Errorf("record status %s; want %s", r.Status, tt.status)
			}
			if tt.ran && r.Child.PID == 0 {
				t.Errorf("record child %v; want the payload", r.Child)
			}
			if tt.ackWrote {
				a, err := handoff.ReadAck(ackFile)
				if err != nil || a.ExecutionID != rec.ID || a.ID() != proc.Self() {
					t.Errorf("ReadAck() = %+v, %v; want %s by %v", a, err, rec.ID, proc.Self())
				}
			}
		})
	}
}

// losingStore is a store whose lease is lost as soon as it is kept.
type losingStore struct {
	*filestore.Store
	keeps chan ledger.Keep
}

func (s losingStore) KeepLease(_ context.Context, id string, k ledger.Keep) {
	s.keeps <- k
	k.Lost()
}

// TestLeaseLostStopsPayload: RunJob and Adopt keep the lease from the
// moment they claim or adopt, and a lease lost stops the payload and
// ends the execution failed.
func TestLeaseLostStopsPayload(t *testing.T) {
	self, err := ledger.LocalOwner(proc.Self())
	if err != nil {
		t.Fatal(err)
	}
	const grace = 100 * time.Millisecond
	argv := []string{"sh", "-c", "exec sleep 60"}
	tests := []struct {
		name string
		run  func(warn func(string, ...any), st ledger.Ledger) Outcome
	}{
		{"RunJob", func(warn func(string, ...any), st ledger.Ledger) Outcome {
			return RunJob(warn, st, RunOptions{Claim: Claim{Job: "job"}, Options: Options{Argv: argv, Grace: grace}})
		}},
		{"Adopt", func(warn func(string, ...any), st ledger.Ledger) Outcome {
			rec, err := st.Claim("job", ledger.ClaimOptions{Owner: self})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Fence(rec.ID); err != nil {
				t.Fatal(err)
			}
			return Adopt(warn, st, AdoptOptions{ID: rec.ID, Options: Options{Argv: argv, Grace: grace}})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := losingStore{Store: openStore(t), keeps: make(chan ledger.Keep, 1)}
			warn, errb := tool()
			begun := time.Now()
			out := tt.run(warn, st)
			var k ledger.Keep
			select {
			case k = <-st.keeps:
			default:
				t.Fatalf("%s kept no lease", tt.name)
			}
			if k.Since.Before(begun) || k.Stop != ledger.StopBudget(grace) || k.Warn == nil {
				t.Errorf("Keep = {Since %v, Stop %v}; want Since after %v, Stop %v and a Warn", k.Since, k.Stop, begun, ledger.StopBudget(grace))
			}
			if out.Code == 0 || out.Err != nil {
				t.Errorf("%s() = code %d, err %v; want the stopped payload's non-zero code", tt.name, out.Code, out.Err)
			}
			r, err := st.Get(out.ID)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != ledger.Failed || !strings.Contains(r.Error, "lease could not be renewed") {
				t.Errorf("record %s %q; want failed, its lease not renewed", r.Status, r.Error)
			}
			if !strings.Contains(errb.String(), "lease could not be renewed") {
				t.Errorf("stderr = %q; want the lost lease said", errb)
			}
		})
	}
}

// heldStore looks, at the claim, whether the payload ran already.
type heldStore struct {
	*filestore.Store
	marker string
	claims []ledger.ClaimOptions
	ranYet []bool
}

func (s *heldStore) Claim(job string, o ledger.ClaimOptions) (ledger.Record, error) {
	did, _ := ran(s.marker)
	s.claims, s.ranYet = append(s.claims, o), append(s.ranYet, did)
	return s.Store.Claim(job, o)
}

// TestRunJobClaimsHeldPayload: the one claim names the payload, forked
// and held, and the execution's id, and the payload runs no instruction
// before it is made.
func TestRunJobClaimsHeldPayload(t *testing.T) {
	argv, path := marker(t, 0)
	st := &heldStore{Store: openStore(t), marker: path}
	warn, errb := tool()
	out := RunJob(warn, st, RunOptions{Claim: Claim{Job: "job", Exclusive: true}, Options: Options{Argv: argv}})
	if out.Code != 0 || out.Refused != nil || out.Err != nil {
		t.Fatalf("RunJob() = %+v; want 0 (stderr %q)", out, errb)
	}
	if len(st.claims) != 1 {
		t.Fatalf("RunJob claimed %d times; want once", len(st.claims))
	}
	co := st.claims[0]
	if co.Child.PID == 0 || co.ID != out.ID || !co.Exclusive || co.Owner.ID() != proc.Self() {
		t.Errorf("claim options %+v; want the payload as child, id %s, exclusive, this process as owner", co, out.ID)
	}
	if st.ranYet[0] {
		t.Errorf("the payload ran before its claim was made")
	}
	if did, as := ran(path); !did || as != out.ID {
		t.Errorf("payload ran = %v as %q; want true as %s", did, as, out.ID)
	}
	r, err := st.Get(out.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Child != co.Child {
		t.Errorf("record child %v; want the claimed %v", r.Child, co.Child)
	}
}
