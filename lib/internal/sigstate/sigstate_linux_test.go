package sigstate

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/tether-sh/tether/internal/testutil"
)

// TestMain runs the tests with no signal ignored but those they ignore
// themselves (testutil.DefaultSignals).
func TestMain(m *testing.M) { testutil.Main(m) }

// buildShowsig builds testdata/showsig with ldflags: go test's own binary
// is stripped of its symbol table (go test links with -s), an installed
// tool is not.
func buildShowsig(t *testing.T, ldflags string) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to build the helper")
	}
	bin := filepath.Join(t.TempDir(), "showsig")
	out, err := exec.Command("go", "build", "-ldflags", ldflags, "-o", bin, "./testdata/showsig").CombinedOutput()
	if err != nil {
		t.Fatalf("go build showsig: %v\n%s", err, out)
	}
	return bin
}

// underTrap runs argv from sh after `trap ” SIGS`, as a user's wrapper
// would start a runner.
func underTrap(t *testing.T, sigs string, argv ...string) string {
	t.Helper()
	script := `exec "$@"`
	if sigs != "" {
		script = "trap '' " + sigs + "; " + script
	}
	out, err := exec.Command("sh", append([]string{"-c", script, "sh"}, argv...)...).Output()
	if err != nil {
		t.Fatalf("sh -c %q %q: %v", script, argv, err)
	}
	return strings.TrimSpace(string(out))
}

// TestPassed starts a program after `trap ” SIGS` and checks that it
// knows every signal it was started with ignored: those the Go runtime
// handles (TERM, PIPE, USR1) as well as those it leaves alone (HUP, TTIN).
// Stripped, it knows only the latter, and says so.
func TestPassed(t *testing.T) {
	full := buildShowsig(t, "-w")
	stripped := buildShowsig(t, "-s -w")
	for _, tc := range []struct {
		bin, sigs, want string
	}{
		{full, "", "exact=true passed=[] pipe=false"},
		{full, "PIPE", "exact=true passed=[broken pipe] pipe=true"},
		{full, "TERM USR1 HUP", "exact=true passed=[hangup user defined signal 1 terminated] pipe=false"},
		{full, "URG CHLD USR2", "exact=true passed=[user defined signal 2] pipe=false"},
		{full, "TTIN QUIT", "exact=true passed=[quit stopped (tty input)] pipe=false"},
		{stripped, "PIPE TERM HUP TTIN", "exact=false passed=[hangup stopped (tty input)] pipe=false"},
	} {
		if got := underTrap(t, tc.sigs, tc.bin); got != tc.want {
			t.Errorf("%s after trap '' %s says %q; want %q", filepath.Base(filepath.Dir(tc.bin)), tc.sigs, got, tc.want)
		}
	}
}

// TestRestore: a process that execs after Restore hands on the signals
// its caller ignored (bit s-1 of SigIgn for signal s).
func TestRestore(t *testing.T) {
	bin := buildShowsig(t, "-w")
	for _, tc := range []struct {
		sigs, want string
	}{
		{"", "SigIgn:\t0000000000000000"},
		{"PIPE USR1", "SigIgn:\t0000000000001200"},
		{"TERM CHLD", "SigIgn:\t0000000000004000"}, // CHLD is never passed on
	} {
		got := underTrap(t, tc.sigs, bin, "exec", "grep", "^SigIgn:", "/proc/self/status")
		if got != tc.want {
			t.Errorf("Restore after trap '' %s: %q; want %q", tc.sigs, got, tc.want)
		}
	}
}

func TestPassable(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		want bool
	}{
		{syscall.SIGTERM, true}, {syscall.SIGPIPE, true}, {syscall.SIGHUP, true},
		{syscall.SIGTTOU, true}, {syscall.Signal(40), true},
		{syscall.SIGCHLD, false}, {syscall.SIGURG, false}, {syscall.SIGPROF, false},
		{syscall.SIGKILL, false}, {syscall.SIGSEGV, false}, {syscall.Signal(32), false},
		{syscall.Signal(16), false},
	} {
		if got := passable(tc.sig); got != tc.want {
			t.Errorf("passable(%v) = %v; want %v", tc.sig, got, tc.want)
		}
	}
}

func TestIgnoredRange(t *testing.T) {
	for _, s := range []syscall.Signal{0, -1, 65, 1000} {
		if Ignored(s) {
			t.Errorf("Ignored(%d) = true; want false", s)
		}
	}
	if !slices.IsSorted(Passed()) {
		t.Errorf("Passed() = %v; want ascending", Passed())
	}
}

// BenchmarkLoad is the first question's cost: the symbol table's scan
// and the table's read. Run it from `go test -c`'s binary, which keeps
// the symbol table (plain go test strips it: the benchmark then measures
// the fallback).
func BenchmarkLoad(b *testing.B) {
	_, exact := load()
	b.ReportMetric(map[bool]float64{false: 0, true: 1}[exact], "exact")
	for b.Loop() {
		load()
	}
}
