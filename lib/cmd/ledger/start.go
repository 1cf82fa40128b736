package ledger

import (
	"fmt"

	"github.com/tether-sh/tether/lib/ledger"
)

type startCmd struct {
	ID    string    `arg:"" predictor:"active" help:"Execution id."`
	Owner ownerFlag `placeholder:"PID[@START]" help:"New owning process (default: keep the claimer)."`
}

func (c *startCmd) Run(e *env) error {
	var owner *ledger.Owner
	if c.Owner.set {
		o, err := c.Owner.resolve()
		if err != nil {
			return err
		}
		owner = &o
	}
	st, err := e.open()
	if err != nil {
		return err
	}
	r, err := st.Start(c.ID, owner)
	return e.printTransition(r, err)
}

// printTransition prints the record a transition produced when --json is
// given; a transition is otherwise silent, like mv.
func (e *env) printTransition(r ledger.Record, err error) error {
	if err != nil || !e.g.JSON {
		return err
	}
	return e.printRecords([]ledger.Record{r}, "")
}

// printAffected prints what recover and prune changed: the count alone, or
// with --json the records, one per line. What was done is printed even
// when err reports records that could not be handled.
func (e *env) printAffected(recs []ledger.Record, err error) error {
	if e.g.JSON {
		if perr := e.printRecords(recs, ""); perr != nil {
			return perr
		}
	} else if _, perr := fmt.Fprintln(e.tool.Stdout, len(recs)); perr != nil {
		return perr
	}
	return err
}
