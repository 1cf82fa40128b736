package ledgercmd

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tether-sh/tether/lib/ledger"
)

type showCmd struct {
	ID    string `arg:"" predictor:"execution" help:"Execution id."`
	Field string `placeholder:"F" help:"Print only this field (a --json key; owner.pid, child.start... for nested ones)."`
}

func (c *showCmd) Run(inv *invocation) error {
	var run []ledger.Record
	err := inv.printOne(c.Field, ledger.ValidID(c.ID), func(st ledger.Ledger) (ledger.Record, error) {
		r, err := st.Get(c.ID)
		if err == nil && r.Attempts > 0 && c.Field == "" && !inv.g.JSON {
			run, err = runAttempts(st, r)
		}
		return r, err
	})
	if err != nil || len(run) == 0 {
		return err
	}
	return printAttempts(inv, run[0].Job, c.ID, run)
}

// runAttempts are the attempts of r's run (ledger run --retry), r's
// included, oldest first: the executions of r's job with r's owner (the
// one ledger run, or spawn's worker, that made them all), r's instant and
// r's number of attempts.
func runAttempts(st ledger.Ledger, r ledger.Record) ([]ledger.Record, error) {
	var run []ledger.Record
	err := st.Each(ledger.Filter{Job: r.Job}, func(x ledger.Record) error {
		if x.Attempts == r.Attempts && x.Owner == r.Owner && x.Instant.Equal(r.Instant) {
			run = append(run, x)
		}
		return nil
	})
	return run, err
}

// printAttempts writes, under show's table of execution id, which attempt
// it is and every attempt of its run, one a line: number, id, state, exit
// status.
func printAttempts(inv *invocation, job, id string, run []ledger.Record) error {
	var b strings.Builder
	for _, x := range run {
		if x.ID == id {
			fmt.Fprintf(&b, "attempt %d of %d; the run's attempts:\n", x.Attempt, x.Attempts)
		}
	}
	for _, x := range run {
		code := "-"
		if x.ExitCode != nil {
			code = strconv.Itoa(*x.ExitCode)
		}
		mark := " "
		if x.ID == id {
			mark = "*"
		}
		fmt.Fprintf(&b, "%s %d/%d  %s  %-9s  exit %s\n", mark, x.Attempt, x.Attempts, x.ID, x.State(), code)
	}
	_, err := fmt.Fprint(inv.tool.Stdout, b.String())
	return err
}

type latestCmd struct {
	Job   string `arg:"" predictor:"job" help:"Job name."`
	Field string `placeholder:"F" help:"Print only this field."`
}

func (c *latestCmd) Run(inv *invocation) error {
	return inv.printOne(c.Field, ledger.ValidJob(c.Job), func(st ledger.Ledger) (ledger.Record, error) {
		return st.Latest(c.Job)
	})
}

// printOne prints the record get reads from the store. The field and the
// argument (argErr) are checked before the store is opened, so bad input
// is reported as such even where there is no store.
func (inv *invocation) printOne(field string, argErr error, get func(ledger.Ledger) (ledger.Record, error)) error {
	if err := checkField(field); err != nil {
		return err
	}
	if argErr != nil {
		return argErr
	}
	st, err := inv.openExisting()
	if err != nil {
		return err
	}
	r, err := get(st)
	if cerr := st.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return inv.printRecords([]ledger.Record{r}, field)
}

type listCmd struct {
	// A pointer: --job '' is an invalid name, refused as every verb
	// refuses it, not the absence of a filter.
	Job    *string `placeholder:"J" predictor:"job" help:"Only executions of this job."`
	Status string  `placeholder:"S" predictor:"status" help:"Only executions in this status (claimed, running, completed, failed, unknown, abandoned)."`
	Field  string  `placeholder:"F" help:"Print only this field."`
}

func (c *listCmd) Run(inv *invocation) error {
	if err := checkField(c.Field); err != nil {
		return err
	}
	var f ledger.Filter
	if c.Job != nil {
		if err := ledger.ValidJob(*c.Job); err != nil {
			return err
		}
		f.Job = *c.Job
	}
	if c.Status != "" {
		s, err := ledger.ParseStatus(c.Status)
		if err != nil {
			return err
		}
		f.Status = s
	}
	st, err := inv.openExisting()
	if err != nil {
		return err
	}
	// Print what could be read, then report what could not (exit 3).
	p := inv.newPrinter(c.Field, true)
	if je, ok := jsonEacher(st); ok && p.json {
		err = je.EachJSON(f, p.addJSON)
	} else {
		err = st.Each(f, p.add)
	}
	if perr := p.flush(); perr != nil && err == nil {
		err = perr
	}
	if cerr := st.Close(); cerr != nil && err == nil {
		err = cerr
	}
	return err
}
