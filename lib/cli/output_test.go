package cli

import (
	"bytes"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/tether-sh/tether/lib/exit"
)

// failAfter accepts n bytes, then fails every write with ENOSPC.
type failAfter struct{ n int }

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) <= f.n {
		f.n -= len(p)
		return len(p), nil
	}
	n := f.n
	f.n = 0
	return n, syscall.ENOSPC
}

func TestOutputDone(t *testing.T) {
	for _, tc := range []struct {
		name   string
		room   int // bytes the output accepts; -1: a buffer that takes all
		code   int
		want   int
		stderr string
	}{
		{"written", -1, exit.OK, exit.OK, ""},
		{"written, refused", -1, exit.Refused, exit.Refused, ""},
		{"lost", 0, exit.OK, exit.System, "t: cannot write output: no space left on device\n"},
		{"short", 3, exit.OK, exit.System, "t: cannot write output: no space left on device\n"},
		{"lost, refused", 0, exit.Refused, exit.System, "t: cannot write output: no space left on device\n"},
		// A tool that reported the loss itself (3) keeps its code and line.
		{"lost, system error", 0, exit.System, exit.System, ""},
		// A code that says more than 3 is kept, and the loss still said.
		{"lost, command status", 0, 124, 124, "t: cannot write output: no space left on device\n"},
		{"written, command status", -1, 124, 124, ""},
	} {
		var stderr bytes.Buffer
		var w = &failAfter{tc.room}
		var o *Output
		if tc.room < 0 {
			o = NewOutput(&bytes.Buffer{})
		} else {
			o = NewOutput(w)
		}
		tool := &Tool{Name: "t", Stdout: o, Stderr: &stderr}
		_, err1 := fmt.Fprintln(tool.Stdout, "12345@67")
		_, err2 := fmt.Fprintln(tool.Stdout, "more")
		if tc.room >= 0 && (!errors.Is(err1, ErrOutput) || !errors.Is(err1, syscall.ENOSPC) || err2 == nil) {
			t.Errorf("%s: writes = %v, %v; want ErrOutput wrapping ENOSPC", tc.name, err1, err2)
		}
		if got := tool.Done(tc.code); got != tc.want || stderr.String() != tc.stderr {
			t.Errorf("%s: Done(%d) = %d, stderr %q; want %d, %q", tc.name, tc.code, got, stderr.String(), tc.want, tc.stderr)
		}
	}
}
