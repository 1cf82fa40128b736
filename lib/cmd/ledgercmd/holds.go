package ledgercmd

import "github.com/tether-sh/tether/lib/ledger"

// holdsCmd is `ledger holds ID`: the verifier a payload calls before a
// write that matters. Not a `fence` subcommand: `ledger fence ID` is the
// handoff, and `fence check` would read as one.
type holdsCmd struct {
	ID string `arg:"" predictor:"active" help:"Execution id (in a payload: \"$TETHER_EXECUTION\")."`
}

func (c *holdsCmd) Run(inv *invocation) error {
	if err := ledger.ValidID(c.ID); err != nil {
		return err
	}
	st, err := inv.openExisting()
	if err != nil {
		return err
	}
	r, err := st.Holds(c.ID)
	if cerr := st.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if inv.g.JSON {
		return inv.printRecords([]ledger.Record{r}, "")
	}
	return nil
}
