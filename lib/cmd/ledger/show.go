package ledger

import "github.com/tether-sh/tether/lib/ledger"

type showCmd struct {
	ID    string `arg:"" help:"Execution id."`
	Field string `placeholder:"F" help:"Print only this field (a --json key; owner.pid, child.start... for nested ones)."`
}

func (c *showCmd) Run(e *env) error {
	if err := checkField(c.Field); err != nil {
		return err
	}
	if err := ledger.ValidID(c.ID); err != nil {
		return err
	}
	st, err := e.open()
	if err != nil {
		return err
	}
	r, err := st.Get(c.ID)
	if err != nil {
		return err
	}
	return e.printRecords([]ledger.Record{r}, c.Field)
}

type latestCmd struct {
	Job   string `arg:"" help:"Job name."`
	Field string `placeholder:"F" help:"Print only this field."`
}

func (c *latestCmd) Run(e *env) error {
	if err := checkField(c.Field); err != nil {
		return err
	}
	if err := ledger.ValidJob(c.Job); err != nil {
		return err
	}
	st, err := e.open()
	if err != nil {
		return err
	}
	r, err := st.Latest(c.Job)
	if err != nil {
		return err
	}
	return e.printRecords([]ledger.Record{r}, c.Field)
}

type listCmd struct {
	Job    string `placeholder:"J" help:"Only executions of this job."`
	Status string `placeholder:"S" help:"Only executions in this status (claimed, running, completed, failed, unknown, abandoned)."`
	Field  string `placeholder:"F" help:"Print only this field."`
}

func (c *listCmd) Run(e *env) error {
	if err := checkField(c.Field); err != nil {
		return err
	}
	f := ledger.Filter{Job: c.Job}
	if c.Status != "" {
		s, err := ledger.ParseStatus(c.Status)
		if err != nil {
			return err
		}
		f.Status = s
	}
	if c.Job != "" {
		if err := ledger.ValidJob(c.Job); err != nil {
			return err
		}
	}
	st, err := e.open()
	if err != nil {
		return err
	}
	recs, err := st.List(f)
	// Print what could be read, then report what could not (exit 3).
	if perr := e.printRecords(recs, c.Field); perr != nil {
		return perr
	}
	return err
}
