package pgstore

import "testing"

// TestSchemaStatuses: the status lists come from the state machine, and
// their text is what the databases made so far hold — the partial unique
// index's predicate, which every ON CONFLICT must repeat, and the CHECK
// constraints. A change to the state machine that changes one is a schema
// migration, not an edit.
func TestSchemaStatuses(t *testing.T) {
	for _, tc := range []struct {
		name, got, want string
	}{
		{"blockingStatuses", blockingStatuses, "('claimed', 'running', 'completed', 'unknown')"},
		{"openStatuses", openStatuses, "('claimed', 'running')"},
		{"terminalStatuses", terminalStatuses, "('completed', 'failed', 'unknown', 'abandoned')"},
		{"takenForGood", takenForGood, "('completed', 'unknown')"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %s; want %s", tc.name, tc.got, tc.want)
		}
	}
}
