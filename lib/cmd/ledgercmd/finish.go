package ledgercmd

import (
	"github.com/tether-sh/tether/lib/ledger"
)

type finishCmd struct {
	ID       string `arg:"" predictor:"active" help:"Execution id."`
	Status   string `required:"" enum:"completed,failed" help:"Result: completed or failed."`
	ExitCode *int   `name:"exit-code" placeholder:"N" help:"The payload's exit code (0-255)."`
	Error    string `placeholder:"MSG" help:"What went wrong."`
}

func (c *finishCmd) Run(inv *invocation) error {
	st, err := inv.open()
	if err != nil {
		return err
	}
	r, err := st.Finish(c.ID, ledger.Status(c.Status), c.ExitCode, c.Error)
	// Recovery judged it first: the result is refused, but kept on the
	// record for the operator (a store that keeps late results).
	err = ledger.KeepLate(st, r, err, c.ID, ledger.Status(c.Status), c.ExitCode, c.Error)
	return inv.printTransition(r, err)
}
