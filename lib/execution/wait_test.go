package execution

import (
	"errors"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/proc"
)

// A live run that ended between the claim's refusal and the wait's first
// look: claim again (Ended), never a refusal (#48.10). A refusal about
// something else (an instant taken) finds nothing live and nothing new
// after one more claim: NoneLive.
func TestLiveWaitNothingLive(t *testing.T) {
	self, err := ledger.LocalOwner(proc.Self())
	if err != nil {
		t.Fatal(err)
	}
	instant := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	tests := []struct {
		name string
		// refuse makes the claim of o refused, then leaves nothing live.
		refuse func(t *testing.T, st ledger.Ledger, o ledger.ClaimOptions)
		o      ledger.ClaimOptions
		want   []WaitResult // after each refused claim
	}{
		{
			name: "live run ended before the look",
			refuse: func(t *testing.T, st ledger.Ledger, o ledger.ClaimOptions) {
				rec, err := st.Claim("job", ledger.ClaimOptions{Owner: self})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := st.Start(rec.ID, nil); err != nil {
					t.Fatal(err)
				}
				if _, err := st.Claim("job", o); !errors.Is(err, ledger.ErrRefused) {
					t.Fatalf("Claim(exclusive) with a live run = %v; want ErrRefused", err)
				}
				code := 0
				if _, err := st.Finish(rec.ID, ledger.Completed, &code, ""); err != nil {
					t.Fatal(err)
				}
			},
			o:    ledger.ClaimOptions{Owner: self, Exclusive: true},
			want: []WaitResult{Ended},
		},
		{
			name: "instant taken",
			refuse: func(t *testing.T, st ledger.Ledger, o ledger.ClaimOptions) {
				rec, err := st.Claim("job", ledger.ClaimOptions{Owner: self, Instant: instant})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := st.Start(rec.ID, nil); err != nil {
					t.Fatal(err)
				}
				code := 0
				if _, err := st.Finish(rec.ID, ledger.Completed, &code, ""); err != nil {
					t.Fatal(err)
				}
			},
			o:    ledger.ClaimOptions{Owner: self, Exclusive: true, Instant: instant},
			want: []WaitResult{Ended, NoneLive},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := openStore(t)
			tt.refuse(t, st, tt.o)
			lw := LiveWait{Job: "job", Until: time.Now().Add(time.Minute)}
			for i, want := range tt.want {
				if i > 0 {
					if _, err := st.Claim("job", tt.o); !errors.Is(err, ledger.ErrRefused) {
						t.Fatalf("claim %d = %v; want ErrRefused", i+1, err)
					}
				}
				start := time.Now()
				got, _, err := lw.Wait(st)
				if err != nil || got != want {
					t.Fatalf("Wait() after refusal %d = %v, %v; want %v, nil", i+1, got, err, want)
				}
				if d := time.Since(start); d > 10*time.Second {
					t.Errorf("Wait() after refusal %d took %v; want no waiting with nothing live", i+1, d)
				}
			}
			if tt.want[len(tt.want)-1] == Ended {
				if _, err := st.Claim("job", tt.o); err != nil {
					t.Errorf("Claim after Wait() = Ended: %v; want it claimed", err)
				}
			}
		})
	}
}
