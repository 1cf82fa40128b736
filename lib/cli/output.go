package cli

import (
	"errors"
	"io"
	"os"
	"sync"

	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/internal/sigpipe"
)

// ErrOutput is wrapped by the error of a lost write to an Output.
var ErrOutput = errors.New("cannot write output")

// Output is a tool's standard output: a writer that remembers the first
// write error, so that output lost to a full disk, /dev/full or a closed
// pipe is exit 3 (CONTRACT.md §1) even where a caller ignored the error. After an
// error every write fails with it; nothing is written out of order.
type Output struct {
	w io.Writer

	mu  sync.Mutex
	err error
}

// NewOutput returns an Output writing to w.
func NewOutput(w io.Writer) *Output { return &Output{w: w} }

// Write implements io.Writer. Its error wraps ErrOutput.
func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return 0, o.err
	}
	if o.w == os.Stdout {
		// A write to a closed pipe on descriptor 1 kills a Go program
		// with SIGPIPE instead of returning EPIPE, unless SIGPIPE is
		// caught or ignored; a duplicate of it is not descriptor 1.
		o.w = sigpipe.Stdout()
	}
	n, err := o.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	if err != nil {
		o.err = &outputError{err}
		return n, o.err
	}
	return n, nil
}

// outputError is a lost write: it is ErrOutput, and unwraps to the cause
// alone (a chain, not a list: tools print a list one error a line).
type outputError struct{ err error }

func (e *outputError) Error() string        { return ErrOutput.Error() + ": " + e.err.Error() }
func (e *outputError) Unwrap() error        { return e.err }
func (e *outputError) Is(target error) bool { return target == ErrOutput }

// Err returns the first write error, or nil.
func (o *Output) Err() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// Done returns the exit code of a tool that finished with code, once
// output to t.Stdout (an *Output) was lost: 3 after one line on stderr
// when code reports no failure of its own as serious (0 to 2); code
// itself, after the line, when it says more than 3 would (124, a
// target's status). A tool that already reported the lost write itself
// returned 3, so the line is never printed twice.
func (t *Tool) Done(code int) int {
	o, ok := t.Stdout.(*Output)
	if !ok || code == exit.System {
		return code
	}
	if err := o.Err(); err != nil {
		t.Warnf("%v", err)
		return max(code, exit.System)
	}
	return code
}
