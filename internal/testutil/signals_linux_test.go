package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestMain(m *testing.M) { Main(m) }

// reportEnv makes TestReportIgnored say which signals its process ignores.
const reportEnv = "TESTUTIL_REPORT_IGNORED"

// TestReportIgnored is the child of TestDefaultSignals.
func TestReportIgnored(t *testing.T) {
	if os.Getenv(reportEnv) == "" {
		t.Skip("the child of TestDefaultSignals")
	}
	sigs, err := ignoredSignals()
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("ignored: %v\n", sigs)
}

// TestDefaultSignals: a test binary started with HUP and PIPE ignored
// (as nohup and a shell's trap leave them) runs its tests with neither.
func TestDefaultSignals(t *testing.T) {
	c := exec.Command("sh", "-c", `trap '' HUP PIPE; exec "$0" "$@"`, Self(t), "-test.run=^TestReportIgnored$", "-test.v")
	c.Env = append(os.Environ(), reportEnv+"=1")
	out, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ignored: []\n") {
		t.Fatalf("test binary started with HUP and PIPE ignored: %v; said:\n%s\nwant ignored: []", err, out)
	}
}
