// Package reporthtml renders a report.Page (lib/ledger/report) as one
// self-contained HTML page, the page `ledger report` writes: a person's
// look at every job, mailed by cron or opened from a file, with no server.
//
// Render writes the page with html/template: every text that came from
// the store (an output, a note, an error, a source, an owner's host name,
// the store's location) reaches the page escaped as text, whatever bytes
// it holds: bytes that are not UTF-8 show as U+FFFD, control characters
// other than tab and line ends as their pictures (␀, ␛).
//
// The page needs nothing outside itself: its CSS is inline, its chart is
// inline SVG, it holds no script (a Content-Security-Policy that allows
// none, and no fetch of anything, says so to the browser), and colour is
// never the only signal: each run's outcome is a glyph and a word too.
package reporthtml
