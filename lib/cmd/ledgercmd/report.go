package ledgercmd

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/cmd/internal/sibling"
	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/internal/durable"
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/location"
	"github.com/tether-sh/tether/lib/ledger/report"
)

// RenderReport writes a report page (reporthtml.Render). ledgerkong sets
// it, which tether-pg links; the ledger binary leaves it nil and hands
// report to tether-pg, so that html/template (2.3 MB, and its start-up
// on every cron tick: +17% for ledger --version) stays out of it.
var RenderReport func(w io.Writer, p *report.Page) error

// reportCmd is `ledger report`: the store as one HTML page
// (lib/ledger/report reads it, RenderReport writes it).
type reportCmd struct {
	Jobs []string `arg:"" optional:"" name:"job" predictor:"job" help:"Jobs to show (default: every job in the store)."`
	// Not kong's path type: it would make - a file of that name.
	HTML string    `name:"html" placeholder:"FILE" help:"Write the page to FILE atomically (a temporary file in its folder, fsync, rename; mode 0644) instead of stdout; - is stdout."`
	Runs cli.Count `name:"runs" default:"50" placeholder:"N" help:"Show each job's newest N runs (1 to 1000)."`
	Tail cli.Size  `name:"tail" default:"16KiB" placeholder:"SIZE" help:"Show the last SIZE bytes of the output kept of each job's latest failure (SIZE is bytes or K, M, G; at least 1)."`
}

func (c *reportCmd) Run(inv *invocation) error {
	for _, j := range c.Jobs {
		if err := ledger.ValidJob(j); err != nil {
			return err
		}
	}
	switch {
	case c.Runs < 1 || int(c.Runs) > report.MaxRuns:
		return exit.Errorf(exit.Usage, "--runs %d: want 1 to %d", c.Runs, report.MaxRuns)
	case c.Tail < 1:
		return exit.Errorf(exit.Usage, "--tail %d: want at least 1 byte", c.Tail)
	}
	if RenderReport == nil {
		// Returns only when tether-pg cannot be run: 3.
		return sibling.Exec(location.PostgresBinary, "ledger", inv.args, "ledger report's page is written by")
	}
	toFile := c.HTML != "" && c.HTML != "-"
	if toFile {
		if err := replaceableAs("--html", c.HTML); err != nil {
			return err
		}
	}
	st, err := inv.openExisting()
	if err != nil {
		return err
	}
	p, err := report.Collect(st, c.Jobs, report.Options{Runs: int(c.Runs), Tail: c.Tail.N(), Version: cli.VersionString()})
	// Closed before the page is written: run by root on a store another
	// user owns, the store is read with that user's rights, the file
	// written with root's.
	if cerr := st.Close(); cerr != nil && err == nil {
		err = cerr
	}
	// Written whole or not at all: a page cut short by an error is not
	// one a person should be mailed as if it were whole.
	var b bytes.Buffer
	if rerr := RenderReport(&b, p); rerr != nil {
		return rerr
	}
	if toFile {
		if werr := durable.WriteFile(c.HTML, b.Bytes(), 0o644); werr != nil {
			return fmt.Errorf("writing the report to %s: %w", c.HTML, werr)
		}
	} else if _, werr := inv.tool.Stdout.Write(b.Bytes()); werr != nil {
		return werr
	}
	// What could not be read is on the page, and said (exit 3), as
	// status and list say it.
	return flatten(err)
}

// replaceableAs refuses (2) a FILE given to flag that holds something
// other than a regular file, as metrics' replaceable does: the new file is
// renamed over the path.
func replaceableAs(flag, path string) error {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().IsRegular() {
		return nil
	}
	return exit.Errorf(exit.Usage, "%s %s: not a regular file (%s); the report replaces FILE whole, renaming a new one over it (- writes to stdout)", flag, path, fileKind(fi.Mode()))
}

func (*reportCmd) Help() string {
	return `One self-contained HTML page (inline CSS and SVG, no script, nothing
fetched: mail it, or open the file anywhere) with, per job (every job of
the store when none is named, in name order): its latest status, its runs
by status and its last success, as status says them; its schedule, as
its newest run recorded it (run --schedule, --every), and its next slot;
a timeline of its newest --runs executions, oldest first, each a
coloured glyph (a check mark completed, a cross failed, ? unknown, a
dash abandoned, a triangle running, a circle claimed) with its slot, attempt, times and exit code; their durations as a bar chart; its live runs
(claimed or running: owner, since when, note); and the newest failed or
unknown execution of those --runs, with the last --tail bytes of the
output kept of it (ledger output), escaped. The header names the store (a
URL without its password) and when the page was made. Reads each job's
summary, its newest --runs executions and its live ones: a cost bounded
by --runs, not by how many the store holds. Creates no store (3 when
there is none); a named job that never ran shows as never ran. What
cannot be read is listed at the top of the page and said on stderr (exit
3) once the page is written. Written to stdout, or with --html FILE to
FILE, replaced whole (a temporary file, fsync, rename; mode 0644). The
page is rendered by tether-pg, which ledger hands the command line to
(the same PID) once its flags are checked, as for a PostgreSQL store: 3
when it is not installed beside ledger or on PATH.

  ledger report --html /var/www/jobs.html
  ledger report backup sync --runs 100 > jobs.html`
}
