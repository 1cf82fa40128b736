package ledgercmd

import "time"

// testNow is the clock the scenarios put ledger at (SetTestClock): nil in
// a released binary, which reads time.Now. Only the test binary's TestMain
// sets it (from its TETHER_TEST_NOW), so that no environment variable of
// a released tool moves its clock.
var testNow func() time.Time

// SetTestClock makes now ledger's clock, and its file store's: for a test
// binary's TestMain only.
func SetTestClock(now func() time.Time) { testNow = now }

// clockNow is ledger's clock: the time a run's slot is chosen at.
func clockNow() time.Time {
	if testNow != nil {
		return testNow()
	}
	return time.Now()
}
