package ledgercmd

import (
	"bufio"
	"fmt"

	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/location"
)

type verifyCmd struct {
	Job    string `arg:"" optional:"" predictor:"job" help:"Check JOB alone (default: the whole store)."`
	Repair bool   `help:"Under the store's lock (its owner only), rebuild what the logs say (indexes, summaries, links) and mark what they cannot (a slot whose execution is gone stays taken), one line per change."`
}

func (c *verifyCmd) Run(inv *invocation) error {
	if c.Job != "" {
		if err := ledger.ValidJob(c.Job); err != nil {
			return err
		}
	}
	// Read-only, as status: no lock, nothing created; a group member, or
	// root as the owner, may check.
	st, err := inv.openExisting()
	if err != nil {
		return err
	}
	if c.Repair {
		// The store exists: open it for writing (its owner's alone).
		if err := st.Close(); err != nil {
			return err
		}
		if st, err = inv.openWith(location.Options{}); err != nil {
			return err
		}
	}
	defer st.Close()
	w := bufio.NewWriter(inv.tool.Stdout)
	rep, err := st.Verify(ledger.VerifyOptions{Job: c.Job, Repair: c.Repair}, func(p ledger.Problem) error {
		_, werr := fmt.Fprintln(w, problemLine(p, c.Repair))
		return werr
	})
	if err != nil {
		w.Flush()
		return err
	}
	fmt.Fprintln(w, verifySummary(st.Location(), rep, c.Repair))
	if err := w.Flush(); err != nil {
		return err
	}
	if rep.Problems > 0 && (!c.Repair || rep.Repaired < rep.Problems) {
		return exitStatus(exit.Refused)
	}
	return nil
}

// problemLine is p as verify prints it: "JOB: what; repair: what it does"
// (once done, "repaired:"; none possible, "cannot repair:").
func problemLine(p ledger.Problem, repaired bool) string {
	job := p.Job
	if job == "" {
		job = "(store)"
	}
	how := "repair"
	switch {
	case p.Cannot:
		how = "cannot repair"
	case repaired:
		how = "repaired"
	}
	return job + ": " + oneLine(p.What) + "; " + how + ": " + oneLine(p.Repair)
}

// verifySummary is verify's last line.
func verifySummary(loc string, rep ledger.VerifyReport, repair bool) string {
	s := fmt.Sprintf("verify: %s: %s, %s; checked %s: ", loc, counted(rep.Jobs, "job"), counted(rep.Executions, "execution"), rep.Checks)
	switch {
	case rep.Problems == 0:
		return s + "clean"
	case repair:
		return s + fmt.Sprintf("%s, %d repaired", counted(rep.Problems, "problem"), rep.Repaired)
	}
	return s + counted(rep.Problems, "problem")
}

// counted is "1 job", "2 jobs".
func counted(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
