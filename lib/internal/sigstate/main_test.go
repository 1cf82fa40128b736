package sigstate

import (
	"os"
	"testing"

	"github.com/tether-sh/tether/internal/testutil"
)

// TestMain runs the tests with no signal ignored but those they ignore
// themselves (testutil.DefaultSignals).
func TestMain(m *testing.M) {
	testutil.DefaultSignals()
	os.Exit(m.Run())
}
