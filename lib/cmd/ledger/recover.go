package ledger

import "github.com/tether-sh/tether/lib/cli"

type recoverCmd struct {
	Grace cli.Duration `default:"30s" placeholder:"D" help:"Leave a fenced claim alone this long after its fence."`
}

func (c *recoverCmd) Run(e *env) error {
	st, err := e.open()
	if err != nil {
		return err
	}
	recs, err := st.Recover(c.Grace.D())
	return e.printAffected(recs, err)
}
