package ledgercmd

import (
	"errors"
	"testing"

	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/ledger"
)

// finishOnly is a store of which withdraw may call Finish alone (any other
// method panics on the nil Ledger); it records the call and fails with err.
type finishOnly struct {
	ledger.Ledger
	id, msg string
	status  ledger.Status
	err     error
}

func (f *finishOnly) Finish(id string, status ledger.Status, code *int, msg string) (ledger.Record, error) {
	f.id, f.status, f.msg = id, status, msg
	return ledger.Record{}, f.err
}

// TestWithdraw covers the way out that a scenario cannot reach: the claim
// cannot be withdrawn either. The line must still name the claim.
func TestWithdraw(t *testing.T) {
	r := ledger.Record{ID: "i1", Job: "j"}
	lost := errors.New("cannot write output: write /dev/stdout: no space left on device")
	for _, tc := range []struct {
		finishErr error
		want      string
	}{
		{nil, "cannot print the id of j (i1): write /dev/stdout: no space left on device; the claim is withdrawn (failed)"},
		{errors.New("disk gone"), "cannot print the id of j (i1): write /dev/stdout: no space left on device; nor withdraw the claim, which stays until its owner is gone: disk gone"},
	} {
		st := &finishOnly{err: tc.finishErr}
		err := withdraw(st, r, lost)
		if err == nil || err.Error() != tc.want {
			t.Errorf("withdraw = %v\nwant %s", err, tc.want)
		}
		if got := exit.Code(err, -1); got != exit.System {
			t.Errorf("exit code %d, want %d", got, exit.System)
		}
		if st.id != "i1" || st.status != ledger.Failed || st.msg != "claim withdrawn: its id could not be printed: write /dev/stdout: no space left on device" {
			t.Errorf("Finish(%q, %q, %q)", st.id, st.status, st.msg)
		}
	}
}
