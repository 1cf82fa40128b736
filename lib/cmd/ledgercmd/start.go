package ledgercmd

import (
	"fmt"

	"github.com/tether-sh/tether/lib/ledger"
)

type startCmd struct {
	ID    string    `arg:"" predictor:"active" help:"Execution id."`
	Owner ownerFlag `placeholder:"PID[@START]" help:"New owning process (default: keep the claimer)."`
}

func (c *startCmd) Run(inv *invocation) error {
	var owner *ledger.Owner
	if c.Owner.set {
		o, err := c.Owner.resolve()
		if err != nil {
			return err
		}
		owner = &o
	}
	st, err := inv.open()
	if err != nil {
		return err
	}
	r, err := st.Start(c.ID, owner)
	return inv.printTransition(r, err)
}

// printTransition prints the record a transition produced when --json is
// given; a transition is otherwise silent, like mv.
func (inv *invocation) printTransition(r ledger.Record, err error) error {
	if err != nil || !inv.g.JSON {
		return err
	}
	return inv.printRecords([]ledger.Record{r}, "")
}

// printAffected prints what recover and prune changed: the count alone, or
// with --json the records, one per line. What was done is printed even
// when err reports records that could not be handled.
func (inv *invocation) printAffected(recs []ledger.Record, err error) error {
	if inv.g.JSON {
		if perr := inv.printRecords(recs, ""); perr != nil {
			return perr
		}
	} else if _, perr := fmt.Fprintln(inv.tool.Stdout, len(recs)); perr != nil {
		return perr
	}
	return err
}
