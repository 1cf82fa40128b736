package ledger

type fenceCmd struct {
	ID string `arg:"" predictor:"active" help:"Execution id."`
}

func (c *fenceCmd) Run(e *env) error {
	st, err := e.open()
	if err != nil {
		return err
	}
	r, err := st.Fence(c.ID)
	return e.printTransition(r, err)
}
