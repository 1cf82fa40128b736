package ledger

import "fmt"

// CanKeepLate reports whether a result may be kept on r as late
// (Ledger.RecordLate): recovery ended it (unknown or abandoned), and no
// late result is kept on it yet. It is the rule every store keeps; a
// store that writes it in its own terms (a database's WHERE) says so.
func CanKeepLate(r Record) bool {
	return (r.Status == Unknown || r.Status == Abandoned) && r.Late == nil
}

// KeepLate is the late-result rule of a finish, held here once for every
// caller (ledger finish, the runners): err is what st.Finish (or
// FinishRetrying) returned for execution id and rec the record as its
// refusal read it. When the finish was refused because recovery had
// ended the execution first, the result is offered to st.RecordLate, so
// that the operator sees it (show --json's "late"), and the error says
// when it was kept. Any other err, nil included, is returned as is; so is
// err when the store keeps no late results or RecordLate fails (the
// refusal is what matters).
func KeepLate(st Ledger, rec Record, err error, id string, status Status, exitCode *int, errMsg string) error {
	if err == nil || !errorsIsAny(err, ErrRefused) || !CanKeepLate(rec) {
		return err
	}
	if kept, lerr := st.RecordLate(id, status, exitCode, errMsg); lerr == nil && kept {
		return fmt.Errorf("%w (the result is kept on the record as late)", err)
	}
	return err
}
