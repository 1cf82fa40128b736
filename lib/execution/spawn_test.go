package execution

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/proc"
)

// TestSpawnJobClaims: SpawnJob claims the job as this process, words a
// refusal as spawn's and records nothing then, and fails an execution
// that never reached a worker. A worker that adopts is the scenarios'
// (testdata/scripts/ledger_spawn*.txtar): it needs the adopt program.
func TestSpawnJobClaims(t *testing.T) {
	instant := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	self, err := ledger.LocalOwner(proc.Self())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		claim   Claim
		refused bool
		code    int           // of the error, when not refused
		errIs   string        // a substring of the error
		status  ledger.Status // of the new record; "": none made
	}{
		{name: "instant taken", claim: Claim{Job: "job", Instant: instant}, refused: true, errIs: "not spawning job: "},
		{name: "bad input", claim: Claim{Job: "job", Every: -time.Second}, code: exit.Usage, errIs: "negative period"},
		{name: "no worker", claim: Claim{Job: "job", Source: "cron"}, code: exit.NotRun, errIs: "cannot start worker", status: ledger.Failed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := openStore(t)
			if _, err := st.Claim("job", ledger.ClaimOptions{Owner: self, Instant: instant}); err != nil {
				t.Fatal(err)
			}
			warn, errb := tool()
			o := SpawnJobOptions{Claim: tt.claim, SpawnOptions: SpawnOptions{
				Adopt: filepath.Join(t.TempDir(), "no-adopt"), Argv: []string{"true"}, Scope: ScopeNever, AckTimeout: time.Second,
			}}
			sp, refused, err := SpawnJob(warn, st, o)
			if sp != nil {
				t.Errorf("SpawnJob() = %+v; want no worker", sp)
			}
			got := err
			if tt.refused {
				got = refused
				if err != nil || !errors.Is(refused, ledger.ErrRefused) {
					t.Errorf("SpawnJob() = refused %v, err %v; want a refusal wrapping ErrRefused", refused, err)
				}
			} else if refused != nil || exit.Code(err, -1) != tt.code {
				t.Errorf("SpawnJob() = refused %v, err %v (code %d); want err with code %d", refused, err, exit.Code(err, -1), tt.code)
			}
			if got == nil || !strings.Contains(got.Error(), tt.errIs) {
				t.Errorf("SpawnJob() error = %v; want %q in it", got, tt.errIs)
			}
			if errb.Len() > 0 {
				t.Errorf("stderr = %q; want nothing said", errb)
			}
			recs, err := ledger.List(st, ledger.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			if tt.status == "" {
				if len(recs) != 1 {
					t.Errorf("SpawnJob made %d records; want none", len(recs)-1)
				}
				return
			}
			if len(recs) != 2 {
				t.Fatalf("SpawnJob made %d records; want 1", len(recs)-1)
			}
			r := recs[1]
			if r.Status != tt.status || r.Source != tt.claim.Source || r.Owner.ID() != self.ID() {
				t.Errorf("record %+v; want %s, source %q, owner %v", r, tt.status, tt.claim.Source, self)
			}
		})
	}
}
