package ledgercmd

import "github.com/tether-sh/tether/lib/ledger"

// beatCmd is `ledger beat ID [--note TEXT] [--if-latest]`: proof of life
// and a progress note, compare-and-swap.
type beatCmd struct {
	ID       string  `arg:"" help:"Execution id."`
	Note     *string `placeholder:"TEXT" help:"Record TEXT as the execution's progress note (\"\" clears it; without --note the last note is kept)."`
	IfLatest bool    `name:"if-latest" help:"Refuse (exit 1) when a newer execution of ID's job exists: the beat is then about an attempt that is no longer current."`
}

func (c *beatCmd) Run(inv *invocation) error {
	st, err := inv.open()
	if err != nil {
		return err
	}
	r, err := st.Beat(c.ID, ledger.BeatOptions{Note: c.Note, IfLatest: c.IfLatest})
	return inv.printTransition(r, err)
}
