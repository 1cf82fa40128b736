package ledgercmd

import (
	"errors"
	"fmt"
	"io"

	"github.com/tether-sh/tether/lib/ledger"
)

// outputCmd is `ledger output ID`: what was kept of a run's output.
type outputCmd struct {
	ID string `arg:"" predictor:"execution" help:"Execution id."`
}

func (c *outputCmd) Run(inv *invocation) error {
	if err := ledger.ValidID(c.ID); err != nil {
		return err
	}
	st, err := inv.openExisting()
	if err != nil {
		return err
	}
	defer st.Close()
	out, err := st.Output(c.ID)
	if errors.Is(err, ledger.ErrNotFound) {
		if _, gerr := st.Get(c.ID); gerr != nil {
			return gerr // no such execution (or the store's trouble)
		}
		if errors.Is(err, ledger.ErrOutputLost) {
			return notKept(err.Error())
		}
		return notKept(fmt.Sprintf("execution %s has no output kept (it wrote nothing, or ran with --keep-output 0, on a terminal, or under an older tether)", c.ID))
	}
	if err != nil {
		return err
	}
	defer out.Close()
	// Copied, not read whole: the file is the store owner's, root may be
	// the reader, and what it holds bounds nothing.
	_, err = io.Copy(inv.tool.Stdout, out)
	return err
}

func (*outputCmd) Help() string {
	return `Prints, byte for byte, the tail of the execution's stdout and stderr
that ledger run, adopt or spawn's worker kept (--keep-output, default the
last 64KiB): one stream, in the order ledger read it (exact when stdout and
stderr were one file, as under cron). It is kept as it is written, so a run
that is still going, or whose runner was SIGKILLed, shows what it wrote so
far. Exit 1 when there is no such execution or nothing was kept (an
output a power cut caught before it reached the disk is said to be lost,
and is not kept either).

  ledger output "$(ledger latest backup --field id)"`
}

// notKept is ErrNotFound (exit 1) in its own words.
type notKept string

func (e notKept) Error() string { return string(e) }
func (e notKept) Unwrap() error { return ledger.ErrNotFound }
