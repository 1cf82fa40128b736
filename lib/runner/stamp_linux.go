package runner

// Stamping a held command's environment (Options.Stamp). A traced command
// is stopped at its exec: its environment strings are on its new stack,
// between env_start and env_end of its /proc/PID/stat, and none of its
// instructions has read them. The runner, its tracer, writes the value
// over the placeholder it was started with, NUL-terminated: the C
// runtime and the kernel read an entry up to its first NUL, so the
// entry reads NAME=VALUE (/proc/PID/environ shows the placeholder's
// leftover bytes as empty entries after it). A command behind the gate
// gets the value with its release (gate.Stamped). Either way no extra
// write to the store and no extra process: the claim that records the
// command is the one that gives the value.

import (
	"strings"

	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/proc"
	"github.com/tether-sh/tether/lib/syntax"
)

// stampOf is o's stamp, NAME=VALUE, once OnStart has returned: "" for
// none; an error for a value Options.Stamp does not allow.
func stampOf(o Options) (string, error) {
	if o.Stamp == nil || o.OnStart == nil {
		return "", nil
	}
	v := o.Stamp.Value()
	if v == "" || len(v) > StampWidth || strings.ContainsAny(v, "\x00=") {
		return "", exit.Errorf(exit.NotRun, "cannot start %s: %s would be %q, not 1 to %d bytes", syntax.EscapeControlChars(o.Argv[0]), o.Stamp.Name, v, StampWidth)
	}
	return o.Stamp.Name + "=" + v, nil
}

// stamp sets t's stamp in its environment, before it runs.
func (t *traced) stamp() error {
	kv, err := stampOf(t.o)
	if err != nil || kv == "" {
		return err
	}
	if err := proc.StampEnv(t.pid, t.o.Stamp.Name, stampPlaceholder, kv[len(t.o.Stamp.Name)+1:]); err != nil {
		return exit.Errorf(exit.NotRun, "cannot start %s: setting %s in its environment: %w", syntax.EscapeControlChars(t.name), t.o.Stamp.Name, err)
	}
	return nil
}
