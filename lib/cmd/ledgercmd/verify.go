package ledgercmd

import (
	"bufio"
	"fmt"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/spec"
)

type verifyCmd struct {
	Job string `arg:"" optional:"" predictor:"job" help:"Check JOB alone (default: the whole store)."`
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
	defer st.Close()
	w := bufio.NewWriter(inv.tool.Stdout)
	rep, err := st.Verify(ledger.VerifyOptions{Job: c.Job}, func(p ledger.Problem) error {
		_, werr := fmt.Fprintln(w, problemLine(p))
		return werr
	})
	if err != nil {
		w.Flush()
		return err
	}
	fmt.Fprintln(w, verifySummary(st.Location(), rep))
	if err := w.Flush(); err != nil {
		return err
	}
	if rep.Problems > 0 {
		return exitStatus(spec.ExitRefused)
	}
	return nil
}

// problemLine is p as verify prints it: "JOB: what; repair: what it
// would do" (none possible: "cannot repair:").
func problemLine(p ledger.Problem) string {
	job := p.Job
	if job == "" {
		job = "(store)"
	}
	how := "repair"
	if p.Cannot {
		how = "cannot repair"
	}
	return job + ": " + oneLine(p.What) + "; " + how + ": " + oneLine(p.Repair)
}

// verifySummary is verify's last line.
func verifySummary(loc string, rep ledger.VerifyReport) string {
	s := fmt.Sprintf("verify: %s: %d jobs, %d executions; checked %s: ", loc, rep.Jobs, rep.Executions, rep.Checks)
	if rep.Problems == 0 {
		return s + "clean"
	}
	return s + fmt.Sprintf("%d problems", rep.Problems)
}
