package ledgercmd

import (
	"errors"
	"os"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/proc"
)

type recoverCmd struct {
	Grace cli.Duration `default:"30s" placeholder:"D" help:"Leave a fenced claim alone this long after its fence."`
	Host  string       `placeholder:"NAME" help:"PostgreSQL store: declare host NAME dead for good: every claimed or running execution owned there becomes abandoned or unknown now, lease or not (not this host: 2)."`
	Quiet bool         `help:"Print the count only when something was recovered, so that cron mails only then."`
}

func (c *recoverCmd) Run(inv *invocation) error {
	// Owners are judged through /proc: through another namespace's,
	// judge nothing (and print no count).
	if err := proc.CheckProcNS(); err != nil {
		return err
	}
	if c.Host != "" {
		return c.recoverHost(inv)
	}
	st, err := inv.open()
	if err != nil {
		return err
	}
	recs, err := st.Recover(c.Grace.D())
	if c.Quiet && len(recs) == 0 && !inv.g.JSON {
		return err
	}
	return inv.printAffected(recs, err)
}

// recoverHost is recover --host NAME.
func (c *recoverCmd) recoverHost(inv *invocation) error {
	if me, _ := os.Hostname(); c.Host == me {
		return exit.Errorf(exit.Usage, "--host %s is this host: recover judges its executions by their processes", c.Host)
	}
	st, err := inv.open()
	if err != nil {
		return err
	}
	recs, err := st.RecoverHost(c.Host)
	if errors.Is(err, ledger.ErrOneHost) {
		return exit.Errorf(exit.Usage, "--host: the file store %s holds only this host's executions", st.Location())
	}
	return inv.printAffected(recs, err)
}
