//go:build !linux

package runner

import (
	"context"
	"errors"

	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/syntax"
)

// Run needs Linux: a child subreaper, pidfds, a command held before its
// first instruction (ptrace or the gate). Elsewhere it runs nothing and
// says so (125).
func Run(ctx context.Context, o Options) (Result, error) {
	name := "a command"
	if len(o.Argv) > 0 {
		name = syntax.EscapeControlChars(o.Argv[0])
	}
	return Result{}, exit.Errorf(exit.NotRun, "cannot run %s: %w (tether's runners need Linux)", name, errors.ErrUnsupported)
}
