package ledger

import (
	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/spec"
)

type pruneCmd struct {
	Keep      int          `placeholder:"N" help:"Keep the N newest terminal records of each job."`
	OlderThan cli.Duration `name:"older-than" placeholder:"D" help:"Drop only records finished more than D ago."`
}

func (c *pruneCmd) Run(e *env) error {
	if c.Keep < 0 {
		return spec.Errorf(spec.ExitUsage, "--keep must not be negative")
	}
	st, err := e.open()
	if err != nil {
		return err
	}
	recs, err := st.Prune(ledger.PruneOptions{Keep: c.Keep, OlderThan: c.OlderThan.D()})
	return e.printAffected(recs, err)
}
