// Package report reads what `ledger report` shows of a ledger: per job
// its summary, its newest runs, its live ones and the tail of its latest
// failure's kept output. lib/ledger/report/reporthtml renders it as one
// self-contained HTML page.
//
// Collect reads through the ledger.Ledger contract alone, so that both
// stores serve it: each job's Summary (runs by status, last success, live
// count), its newest Options.Runs executions (ledger.Filter.Newest: a
// cost bounded by Options.Runs, not by what the job holds), its live
// ones, and the tail of the kept output of the newest failure among them
// (Ledger.Output, at most Options.Tail bytes held).
//
// The reading and the rendering are two packages so that the ledger
// binary, which runs on every cron tick, links this one and not
// html/template (its size and its start-up): tether-pg, which links
// kong's text/template already, renders the page (ledgerkong registers
// reporthtml.Render with lib/cmd/ledgercmd).
//
//	p, err := report.Collect(st, nil, report.Options{}) // err: what is in p.Problems
//	reporthtml.Render(w, p)
package report
