package ledger

import (
	"errors"
	"fmt"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/location"
)

type finishCmd struct {
	ID       string `arg:"" predictor:"active" help:"Execution id."`
	Status   string `required:"" enum:"completed,failed" help:"Result: completed or failed."`
	ExitCode *int   `name:"exit-code" placeholder:"N" help:"The payload's exit code (0-255)."`
	Error    string `placeholder:"MSG" help:"What went wrong."`
}

func (c *finishCmd) Run(e *env) error {
	st, err := e.open()
	if err != nil {
		return err
	}
	r, err := st.Finish(c.ID, ledger.Status(c.Status), c.ExitCode, c.Error)
	if err != nil && errors.Is(err, ledger.ErrRefused) && (r.Status == ledger.Unknown || r.Status == ledger.Abandoned) {
		// Recovery judged it first: the result is refused, but kept on
		// the record for the operator (a store that can).
		if lr, ok := st.(location.LateRecorder); ok {
			if kept, lerr := lr.RecordLate(c.ID, ledger.Status(c.Status), c.ExitCode, c.Error); lerr == nil && kept {
				err = fmt.Errorf("%w (the result is kept on the record as late)", err)
			}
		}
	}
	return e.printTransition(r, err)
}
