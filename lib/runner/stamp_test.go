//go:build linux

package runner_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether-sh/tether/lib/proc"
	"github.com/tether-sh/tether/lib/runner"
)

// TestRunStamp: a stamped variable holds, from the command's first
// instruction, the value OnStart learnt (whatever the caller's
// environment held under that name), both ways of holding it, and a C
// program's view of it (env) is the same as the shell's.
func TestRunStamp(t *testing.T) {
	for _, hold := range runner.Holds {
		t.Run(hold.Name, func(t *testing.T) {
			defer hold.Set()()
			dir := t.TempDir()
			out := filepath.Join(dir, "env")
			value := ""
			res, err := runner.Run(context.Background(), runner.Options{
				Argv:  sh(`echo "sh:$TETHER_STAMP_TEST" > ` + out + `; env | grep ^TETHER_STAMP_TEST= >> ` + out),
				Env:   []string{"TETHER_STAMP_TEST=outer", "PATH=" + os.Getenv("PATH")},
				Stamp: &runner.Stamp{Name: "TETHER_STAMP_TEST", Value: func() string { return value }},
				OnStart: func(proc.ID) error {
					value = "1099511627781"
					return nil
				},
			})
			if err != nil || res.Code() != 0 {
				t.Fatalf("Run = %d, %v; want 0", res.Code(), err)
			}
			b, err := os.ReadFile(out)
			if want := "sh:1099511627781\nTETHER_STAMP_TEST=1099511627781\n"; err != nil || string(b) != want {
				t.Errorf("command's TETHER_STAMP_TEST: %q, %v; want %q", b, err, want)
			}
			noChildren(t)
		})
	}
}

// TestRunStampRefused: a value the stamp cannot hold keeps the command
// from running, with 125.
func TestRunStampRefused(t *testing.T) {
	for _, hold := range runner.Holds {
		t.Run(hold.Name, func(t *testing.T) {
			defer hold.Set()()
			marker := filepath.Join(t.TempDir(), "ran")
			_, err := runner.Run(context.Background(), runner.Options{
				Argv:    sh(`touch ` + marker),
				Stamp:   &runner.Stamp{Name: "TETHER_STAMP_TEST", Value: func() string { return strings.Repeat("9", 21) }},
				OnStart: func(proc.ID) error { return nil },
			})
			if err == nil || !strings.Contains(err.Error(), "TETHER_STAMP_TEST") {
				t.Errorf("Run with a 21-byte stamp = %v; want an error naming the variable", err)
			}
			if _, serr := os.Stat(marker); serr == nil {
				t.Errorf("the command ran")
			}
			noChildren(t)
		})
	}
}
