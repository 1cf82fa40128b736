package ledgercmd

type fenceCmd struct {
	ID string `arg:"" predictor:"active" help:"Execution id."`
}

func (c *fenceCmd) Run(inv *invocation) error {
	st, err := inv.open()
	if err != nil {
		return err
	}
	r, err := st.Fence(c.ID)
	return inv.printTransition(r, err)
}
