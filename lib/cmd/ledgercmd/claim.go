package ledgercmd

import (
	"fmt"
	"strings"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/execution"
	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/location"
)

// jobClaim is what every subcommand that claims takes: claim, run, spawn.
type jobClaim struct {
	Job       string        `arg:"" predictor:"job" help:"Job name: 1-128 of [A-Za-z0-9._:@-]."`
	Source    string        `placeholder:"S" help:"Free text naming who dispatched it (cron, a host, a trigger)."`
	Instant   instantFlag   `placeholder:"T" help:"Scheduled instant (RFC 3339 or unix seconds): refused if JOB already has a claimed, running, completed or unknown execution for it."`
	Exclusive bool          `help:"Refused while JOB has a claimed or running execution whose owner is alive (dead owners are recovered first)."`
	Every     cli.Retention `placeholder:"D" help:"Refused while JOB's last success started less than D ago (a duration, or days: 1d; less a slack of D/10, at most 30s, so that a tick a little early is due), or while it has a live execution (dead owners are recovered first): an hourly cron line with --every 1d runs once a day, never drifting, and catches up after downtime, as anacron; the run records @every D as its schedule. Decided under the store's lock (on PostgreSQL a lock on JOB), so that one run wins a period across hosts."`
}

// options are the claim options the flags name, for ledger claim; the
// caller sets Owner.
func (c jobClaim) options() ledger.ClaimOptions {
	return ledger.ClaimOptions{Source: c.Source, Instant: c.Instant.t, Exclusive: c.Exclusive, Every: c.Every.D()}
}

// claim is what ledger run and spawn claim, as the flags name it
// (execution.RunJob and SpawnJob supply the owner).
func (c jobClaim) claim() execution.Claim {
	return execution.Claim{Job: c.Job, Source: c.Source, Instant: c.Instant.t, Exclusive: c.Exclusive, Every: c.Every.D()}
}

type claimCmd struct {
	jobClaim
	Owner ownerFlag    `placeholder:"PID[@START]" help:"Owning process (default: the caller's parent; in a script use --owner $$$$)."`
	Lease cli.Duration `placeholder:"D" help:"PostgreSQL store: give the owner a lease of D, renewed by ledger beat ID; once it runs out, recover on any host judges the owner gone (default: none; an owner on another host is then judged only there)."`
}

func (c *claimCmd) Run(inv *invocation) error {
	if err := ledger.ValidJob(c.Job); err != nil {
		return err
	}
	owner, err := c.Owner.resolve()
	if err != nil {
		return err
	}
	st, err := inv.openWith(location.Options{Lease: c.Lease.D()})
	if err != nil {
		return err
	}
	o := c.options()
	o.Owner = owner
	r, err := st.Claim(c.Job, o)
	if err != nil {
		return err
	}
	if err := c.print(inv, r); err != nil {
		return withdraw(st, r, err)
	}
	return nil
}

// print writes the new claim's id (or its record, --json).
func (c *claimCmd) print(inv *invocation, r ledger.Record) error {
	if inv.g.JSON {
		return inv.printRecords([]ledger.Record{r}, "")
	}
	_, err := fmt.Fprintln(inv.tool.Stdout, r.ID)
	return err
}

// withdraw ends claim r, whose id could not be printed (printErr), and
// returns the error to exit 3 with: the caller, told of a failure, cannot
// name the claim to start or finish it, and left claimed it would block its
// job's --exclusive and --instant claims until its owner died (CONTRACT.md
// §3.2.5: never a claim committed after the tool gave up). The store's one
// way to end a claim that never started, short of recover's judging its
// owner dead, is Finish as failed; a failed claim may be retried, as an
// abandoned one may.
func withdraw(st ledger.Ledger, r ledger.Record, printErr error) error {
	if _, err := st.Finish(r.ID, ledger.Failed, nil, ledger.ErrorText("claim withdrawn: its id could not be printed: "+lostWhy(printErr))); err != nil {
		return idLost(r.Job, r.ID, printErr, fmt.Sprintf("nor withdraw the claim, which stays until its owner is gone: %v", err))
	}
	return idLost(r.Job, r.ID, printErr, "the claim is withdrawn (failed)")
}

// idLost is the one line (exit 3) of a new execution's id that could not
// be printed (printErr): the job, the id, why, and what becomes of it.
// A caller told of a failure must still be able to find what it made.
func idLost(job, id string, printErr error, fate string) error {
	return exit.Errorf(exit.System, "cannot print the id of %s (%s): %s; %s", job, id, lostWhy(printErr), fate)
}

// lostWhy is a lost write's cause, without cli.ErrOutput's words.
func lostWhy(err error) string {
	return strings.TrimPrefix(err.Error(), cli.ErrOutput.Error()+": ")
}
