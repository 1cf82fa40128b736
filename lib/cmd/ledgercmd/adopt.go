package ledgercmd

type adoptCmd struct {
	ID    string    `arg:"" predictor:"active" help:"Execution id."`
	Owner ownerFlag `placeholder:"PID[@START]" help:"Adopting process (default: the caller's parent)."`
}

func (c *adoptCmd) Run(inv *invocation) error {
	owner, err := c.Owner.resolve()
	if err != nil {
		return err
	}
	st, err := inv.open()
	if err != nil {
		return err
	}
	r, err := st.Adopt(c.ID, owner)
	return inv.printTransition(r, err)
}
