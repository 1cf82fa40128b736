// Package report renders a ledger as one self-contained HTML page, the
// page `ledger report` writes: a person's weekly look at every job, mailed
// by cron or opened from a file, with no server.
//
// Collect reads what the page shows through the ledger.Ledger contract
// alone, so that both stores serve it: each job's Summary (runs by
// status, last success, live count), its newest Options.Runs executions
// (ledger.Filter.Newest: a cost bounded by Options.Runs, not by what the
// job holds), its live ones, and the tail of the kept output of the newest
// failure among them (Ledger.Output, at most Options.Tail bytes held). Render writes
// the page with html/template: every text that came from the store (an
// output, a note, an error, a source, an owner's host name) reaches the
// page escaped as text, whatever bytes it holds (invalid UTF-8 shows as
// U+FFFD, NUL too).
//
// The page needs nothing outside itself: its CSS is inline, its charts
// are inline SVG, it holds no script (a Content-Security-Policy that
// allows none, and no fetch of anything, says so to the browser), and
// colour is never the only signal: each run's outcome is a glyph and a
// label too.
//
//	p, err := report.Collect(st, nil, report.Options{})
//	if p != nil {
//		report.Render(w, p)
//	}
package report
