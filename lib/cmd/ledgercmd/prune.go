package ledgercmd

import (
	"fmt"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/location"
)

type pruneCmd struct {
	Keep      cli.Count     `placeholder:"N" help:"Keep the N newest terminal records of each job."`
	OlderThan cli.Retention `name:"older-than" placeholder:"D" help:"Drop only records finished more than D ago (a duration, or days: 7d)."`
	All       bool          `help:"Drop every terminal record (prune without --keep or --older-than refuses, so that a stray word in a crontab cannot empty the history)."`
	DryRun    bool          `name:"dry-run" short:"n" help:"List the records prune would delete (as list does, --json too) and delete nothing."`
}

func (c *pruneCmd) Run(inv *invocation) error {
	// --keep 0 alone is refused too: ledger run's --keep 0 keeps every
	// execution, so prune's (keep none) is not what it reads as.
	switch {
	case c.All && (c.Keep > 0 || c.OlderThan > 0):
		return exit.Errorf(exit.Usage, "prune: --all drops every terminal record: give it alone, or --keep N / --older-than D instead")
	case !c.All && c.Keep == 0 && c.OlderThan == 0:
		return exit.Errorf(exit.Usage, "prune: say which records go: --keep N, --older-than D, or --all")
	}
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
	// --dry-run lists what would go, as list does; prune prints how many
	// went, or with --json each one. Either way the records stream.
	if !c.DryRun && !inv.g.JSON {
		n, err := st.Prune(o, nil)
		if _, perr := fmt.Fprintln(inv.tool.Stdout, n); perr != nil && err == nil {
			err = perr
		}
		return err
	}
	p := inv.newPrinter("", true)
	_, err = st.Prune(o, p.add)
	if perr := p.flush(); perr != nil && err == nil {
		err = perr
	}
	return err
}
