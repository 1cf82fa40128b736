package stopbounded

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/tether-sh/tether/lib/cli"
)

func TestPidfileExit(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"missing", readErr(filepath.Join(dir, "none.pid")), cli.ExitUsage},
		{"empty", readErr(write("empty.pid", "\n")), cli.ExitUsage},
		{"two words", readErr(write("two.pid", "12 34\n")), cli.ExitUsage},
		{"not a pid", readErr(write("bad.pid", "-1\n")), cli.ExitUsage},
		{"a directory", readErr(dir), cli.ExitUsage},
		// Root reads any file, so these are made the way readPidfile wraps them.
		{"unreadable", fmt.Errorf("pidfile p: %w", syscall.EACCES), cli.ExitSystem},
		{"I/O error", fmt.Errorf("pidfile p: %w", syscall.EIO), cli.ExitSystem},
	} {
		if tc.err == nil {
			t.Errorf("%s: readPidfile accepted it", tc.name)
			continue
		}
		if got := pidfileExit(tc.err); got != tc.want {
			t.Errorf("pidfileExit(%s: %v) = %d; want %d", tc.name, tc.err, got, tc.want)
		}
	}
	if got, err := readPidfile(write("ok.pid", " 42@7\n")); got != "42@7" || err != nil {
		t.Errorf("readPidfile(ok.pid) = %q, %v; want 42@7", got, err)
	}
}

func readErr(path string) error {
	_, err := readPidfile(path)
	return err
}
