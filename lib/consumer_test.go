package lib_test

import (
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/tether-sh/tether/lib"
)

// TestMain registers the command map exactly as another project would,
// and nothing else.
func TestMain(m *testing.M) { testscript.Main(m, lib.ScriptCommands()) }

// TestConsumerSuite is another project's testscript suite with no Setup of
// its own (HOME=/no-home): every store the scripts use lies under $WORK,
// and nothing is written to testscript's HOME.
func TestConsumerSuite(t *testing.T) {
	const home = "/no-home"
	if _, err := os.Lstat(home); err == nil {
		t.Skipf("%s exists already: cannot tell whether the suite wrote there", home)
	}
	testscript.Run(t, testscript.Params{Dir: "testdata/consumer", RequireExplicitExec: true})
	if _, err := os.Lstat(home); err == nil {
		t.Errorf("after the suite, %s exists; want nothing written outside $WORK", home)
		os.RemoveAll(home)
	}
}
