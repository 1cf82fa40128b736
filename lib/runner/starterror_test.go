//go:build linux

package runner_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tether-sh/tether/lib/proc"
	"github.com/tether-sh/tether/lib/runner"
)

// TestStartErrorQuotesName: the command's name is the user's word, quoted
// escaped so that the diagnostic stays one line (CONTRACT.md §1.2),
// whatever it holds.
func TestStartErrorQuotesName(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"plain", &exec.Error{Name: "plain", Err: exec.ErrNotFound}, "plain: command not found"},
		{"x\ny", &exec.Error{Name: "x\ny", Err: exec.ErrNotFound}, `x\ny: command not found`},
		{"\x1b[31mred", &exec.Error{Name: "\x1b[31mred", Err: exec.ErrNotFound}, `\x1b[31mred: command not found`},
		{"./x\ny", &exec.Error{Name: "./x\ny", Err: exec.ErrNotFound}, `./x\ny: command not found`},
		// Left for the record to keep as U+FFFD, and for the diagnostic to
		// escape when it prints.
		{"\xff\xfe", &exec.Error{Name: "\xff\xfe", Err: exec.ErrNotFound}, "\xff\xfe: command not found"},
	}
	for _, tt := range tests {
		if got := runner.StartError(tt.name, tt.err).Error(); got != tt.want {
			t.Errorf("StartError(%q, %v) = %q; want %q", tt.name, tt.err, got, tt.want)
		}
	}
}

// TestRunStartErrorOneLine: however Run fails to start a command whose
// name holds a newline, its error is one line.
func TestRunStartErrorOneLine(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		argv []string
		want string
	}{
		{[]string{"x\ny"}, `x\ny: command not found`},
		{[]string{filepath.Join(dir, "x\ny")}, filepath.Join(dir, `x\ny`) + ": command not found"},
		{[]string{dir + "/\n"}, dir + `/\n: cannot execute: permission denied`},
	}
	for _, hold := range append([]string{"unheld"}, holdNames()...) {
		for _, tt := range tests {
			restore := setHold(hold)
			o := runner.Options{Argv: tt.argv}
			if hold != "unheld" {
				o.OnStart = func(proc.ID) error { return nil }
			}
			_, err := runner.Run(context.Background(), o)
			restore()
			if err == nil || err.Error() != tt.want {
				t.Errorf("%s: Run(%q) = %v; want %s", hold, tt.argv, err, tt.want)
			}
		}
	}
}
