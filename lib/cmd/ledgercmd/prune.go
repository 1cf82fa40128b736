package ledgercmd

import (
	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/location"
)

type pruneCmd struct {
	Keep      cli.Count     `placeholder:"N" help:"Keep the N newest terminal records of each job."`
	OlderThan cli.Retention `name:"older-than" placeholder:"D" help:"Drop only records finished more than D ago (a duration, or days: 7d)."`
	DryRun    bool          `name:"dry-run" short:"n" help:"List the records prune would delete (as list does, --json too) and delete nothing."`
}

func (c *pruneCmd) Run(inv *invocation) error {
	open := inv.open
	if c.DryRun {
		// Read-only, but under the lock: its owner's, never root's as
		// its owner (openExisting).
		open = func() (ledger.Ledger, error) { return inv.openWith(location.Options{Existing: true}) }
	}
	st, err := open()
	if err != nil {
		return err
	}
	o := ledger.PruneOptions{Keep: int(c.Keep), OlderThan: c.OlderThan.D(), DryRun: c.DryRun}
	recs, err := st.Prune(o)
	if c.DryRun {
		if perr := inv.printRecords(recs, ""); perr != nil {
			return perr
		}
		return err
	}
	return inv.printAffected(recs, err)
}
