package ledgercmd

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/internal/durable"
	"github.com/tether-sh/tether/lib/ledger"
)

type metricsCmd struct {
	Grace  cli.Retention `name:"grace" placeholder:"D" help:"How long past its slot a run may start before a job is late (default: a tenth of its schedule's period, 1m to 1h)."`
	Output string        `name:"output" short:"o" type:"path" placeholder:"FILE" help:"Write the metrics to FILE atomically (a temporary file in its folder, fsync, rename; mode 0644), for node_exporter's textfile collector, instead of stdout."`
}

func (c *metricsCmd) Run(inv *invocation) error {
	if c.Grace.D() < 0 {
		return exit.Errorf(exit.Usage, "--grace must not be negative")
	}
	sums, err := inv.summaries()
	if err != nil {
		return err
	}
	now := clockNow()
	views := make([]jobView, len(sums))
	for i, s := range sums {
		views[i] = viewOf(s, now, c.Grace.D())
	}
	var b bytes.Buffer
	writeMetrics(&b, views)
	if c.Output == "" {
		_, err := inv.tool.Stdout.Write(b.Bytes())
		return err
	}
	if err := replaceable(c.Output); err != nil {
		return err
	}
	if err := durable.WriteFile(c.Output, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing metrics to %s: %w", c.Output, err)
	}
	return nil
}

// replaceable refuses (2) an --output path that holds something other than
// a regular file: durable.WriteFile renames a new file over the path, which
// would turn a device (/dev/null), a FIFO or a folder's place into a
// regular file, and would replace a symlink (/dev/stdout) rather than write
// through it. Nothing there is fine: the file is created. Any other trouble
// looking (a missing folder, permission) is left to the write, to report as
// it fails.
func replaceable(path string) error {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().IsRegular() {
		return nil
	}
	return exit.Errorf(exit.Usage, "--output %s: not a regular file (%s); metrics replace FILE whole, renaming a new one over it", path, fileKind(fi.Mode()))
}

// fileKind names the kind of file m is, for a refusal.
func fileKind(m fs.FileMode) string {
	switch t := m.Type(); {
	case t&fs.ModeSymlink != 0:
		return "a symbolic link"
	case t&fs.ModeDir != 0:
		return "a directory"
	case t&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeCharDevice != 0:
		return "a character device"
	case t&fs.ModeDevice != 0:
		return "a block device"
	}
	return "mode " + m.String()
}

// The Prometheus text exposition format (version 0.0.4) is written here by
// hand: github.com/prometheus/common/expfmt, the library that writes it,
// brings google.golang.org/protobuf and ~90 package initialisers into every
// ledger process (measured: 100 inits against 12, +1 ms of init, a binary
// 6 MB larger), and ledger is one binary whose start-up is on every cron
// run's path. TestMetricsNodeExporter holds this writer to promtool and to
// node_exporter, which parses it with expfmt.

// metricFamily is one metric of ledger metrics: its name, type, help, and
// how a job's summary gives its samples.
type metricFamily struct {
	name, typ, help string
	samples         func(v jobView, add func(labels string, v float64))
}

// terminalStatuses are the statuses tether_runs_total counts.
var terminalStatuses = func() []ledger.Status {
	var out []ledger.Status
	for _, s := range ledger.Statuses {
		if s.Terminal() {
			out = append(out, s)
		}
	}
	return out
}()

var metricFamilies = []metricFamily{
	{"tether_last_success_timestamp_seconds", "gauge",
		"When the job's newest successful (completed) execution finished, in Unix time; 0 when it never succeeded.",
		func(v jobView, add func(string, float64)) {
			s := v.sum
			add("", unixSeconds(s.LastSuccess.FinishedAt))
		}},
	{"tether_last_finish_timestamp_seconds", "gauge",
		"When the job's newest terminal execution finished, in Unix time; 0 when none did.",
		func(v jobView, add func(string, float64)) {
			s := v.sum
			add("", unixSeconds(s.LastFinished.FinishedAt))
		}},
	{"tether_last_duration_seconds", "gauge",
		"How long the job's newest terminal execution ran (from its start, or its claim if it never started, to its end).",
		func(v jobView, add func(string, float64)) {
			s := v.sum
			if s.LastFinished.ID != "" {
				add("", lastDuration(s.LastFinished, s.LastFinished.FinishedAt).Seconds())
			}
		}},
	{"tether_last_exit_code", "gauge",
		"The exit code of the job's newest terminal execution (absent when it recorded none).",
		func(v jobView, add func(string, float64)) {
			s := v.sum
			if s.LastFinished.ID != "" && s.LastFinished.ExitCode != nil {
				add("", float64(*s.LastFinished.ExitCode))
			}
		}},
	{"tether_last_run_success", "gauge",
		"1 when the job's newest terminal execution completed, 0 when it failed or was recovered (absent when none finished).",
		func(v jobView, add func(string, float64)) {
			s := v.sum
			if s.LastFinished.ID != "" {
				v := 0.0
				if s.LastFinished.Status == ledger.Completed {
					v = 1
				}
				add("", v)
			}
		}},
	{"tether_runs_total", "counter",
		"Executions of the job that ended, by terminal status (completed, failed, unknown, abandoned).",
		func(v jobView, add func(string, float64)) {
			s := v.sum
			for _, st := range terminalStatuses {
				add(`status="`+string(st)+`"`, float64(s.Runs[st]))
			}
		}},
	{"tether_live_runs", "gauge",
		"Executions of the job claimed, handed off or running now.",
		func(v jobView, add func(string, float64)) {
			add("", float64(v.sum.Live))
		}},
	{"tether_next_run_timestamp_seconds", "gauge",
		"When the job's next run is due by its schedule, in Unix time: the slot after its newest run's (absent when its schedule is unknown).",
		func(v jobView, add func(string, float64)) {
			if !v.next.IsZero() {
				add("", unixSeconds(v.next))
			}
		}},
	{"tether_late_seconds", "gauge",
		"How long ago the job's next run was due, once that slot's grace passed with no execution for it; 0 when not late (absent when its schedule is unknown).",
		func(v jobView, add func(string, float64)) {
			if !v.next.IsZero() {
				add("", v.late.Seconds())
			}
		}},
}

// jobLabel is the label that names the job in every sample: not "job",
// which a Prometheus scrape gives the target (the target's wins, and the
// sample's becomes exported_job, so that {job="backup"} would match
// nothing).
const jobLabel = "tether_job"

// writeMetrics writes the jobs' views in the Prometheus text format:
// every family once, with its HELP and TYPE, and one sample per job (per
// job and status for tether_runs_total), labelled tether_job="JOB".
func writeMetrics(w io.Writer, views []jobView) {
	for _, f := range metricFamilies {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", f.name, f.help, f.name, f.typ)
		for _, jv := range views {
			f.samples(jv, func(labels string, v float64) {
				l := jobLabel + `="` + labelValue(jv.sum.Job) + `"`
				if labels != "" {
					l += "," + labels
				}
				fmt.Fprintf(w, "%s{%s} %s\n", f.name, l, strconv.FormatFloat(v, 'g', -1, 64))
			})
		}
	}
}

// labelValue escapes a label value as the text format wants: backslash,
// double quote and newline. (Job names are [A-Za-z0-9._:@-] today; this
// keeps the output valid whatever a store returns.)
func labelValue(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// unixSeconds is t in Unix seconds (with its fraction), 0 for the zero time.
func unixSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}

func (*metricsCmd) Help() string {
	return `Prints the Prometheus text format, one sample per job labelled
tether_job="JOB" (not job=, which a scrape gives the target: a sample's
own job label becomes exported_job): tether_last_success_timestamp_seconds
(0: never succeeded), tether_last_finish_timestamp_seconds,
tether_last_duration_seconds, tether_last_exit_code,
tether_last_run_success (1 or 0), tether_runs_total{status} (completed,
failed, unknown, abandoned; prune does not decrease it),
tether_live_runs, and, for a job whose schedule is known (its newest run
was run with --schedule or --every), tether_next_run_timestamp_seconds
(the slot after its newest run's) and tether_late_seconds (how long ago
that slot was due once --grace passed with no execution for it, else 0;
as of the write: time() - tether_next_run_timestamp_seconds is live).
--output FILE replaces FILE atomically, mode 0644, for node_exporter's
textfile collector (name it *.prom in the collector's folder); FILE must
be a regular file or missing: a symlink, a device, a FIFO or a folder is
refused (2), as the rename would replace it. Reads a per-job summary,
never every record; creates no store (3 when there is none). Run by root
on a file store another user owns, it reads the store with that user's
rights and writes FILE as root.

  ledger metrics --output /var/lib/prometheus/node-exporter/tether.prom`
}
