package tether_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tether-sh/tether/internal/pgtest"
)

// TestMetricsNodeExporter writes `ledger metrics --output` into the
// directory of a real node_exporter's textfile collector, checks the file
// with promtool, and scrapes node_exporter's /metrics (which parses it with
// github.com/prometheus/common/expfmt): the tether_ samples come through,
// and the collector reports no error. promtool and node_exporter are
// Debian's prometheus and prometheus-node-exporter (.ci/run installs them);
// without them the test is skipped, or fails when CI=true.
func TestMetricsNodeExporter(t *testing.T) {
	t.Parallel()
	promtool := lookTool(t, "promtool")
	exporter := lookTool(t, "prometheus-node-exporter", "node_exporter")

	dir := t.TempDir()
	for _, args := range [][]string{
		{"run", "backup", "--", "true"},
		{"run", "backup", "--", "sh", "-c", "exit 3"},
		{"run", "report", "--", "true"},
		{"claim", "report"},
	} {
		if out, code, err := runTool(dir, "ledger", args...); err != nil || (code != 0 && code != 3) {
			t.Fatalf("ledger %s = %d, %v; %s", strings.Join(args, " "), code, err, out)
		}
	}
	textfiles := filepath.Join(dir, "textfile")
	if err := os.Mkdir(textfiles, 0o755); err != nil {
		t.Fatal(err)
	}
	prom := filepath.Join(textfiles, "tether.prom")
	if out, code, err := runTool(dir, "ledger", "metrics", "--output", prom); err != nil || code != 0 {
		t.Fatalf("ledger metrics --output = %d, %v; %s", code, err, out)
	}

	// promtool's lint: names, units, HELP and TYPE, counters' _total.
	check := exec.Command(promtool, "check", "metrics")
	f, err := os.Open(prom)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	check.Stdin = f
	if out, err := check.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Fatalf("promtool check metrics = %v; %s", err, out)
	}

	body := scrapeNodeExporter(t, exporter, textfiles)
	for _, want := range []string{
		`^tether_last_success_timestamp_seconds\{tether_job="backup"\} \d\.\d+e\+09$`,
		`^tether_last_exit_code\{tether_job="backup"\} 3$`,
		`^tether_runs_total\{status="completed",tether_job="backup"\} 1$`,
		`^tether_runs_total\{status="failed",tether_job="backup"\} 1$`,
		`^tether_live_runs\{tether_job="report"\} 1$`,
		`^tether_last_run_success\{tether_job="report"\} 1$`,
		`^node_textfile_scrape_error 0$`,
	} {
		if !regexp.MustCompile(`(?m)` + want).MatchString(body) {
			t.Errorf("node_exporter's /metrics has no line matching %s; it has:\n%s", want, grepLines(body, "tether_|textfile"))
		}
	}
}

// lookTool returns the path of the first of names found in $PATH, or skips
// t (fails it when CI=true).
func lookTool(t *testing.T, names ...string) string {
	t.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	err := fmt.Errorf("%s not found in $PATH; install Debian's prometheus and prometheus-node-exporter", strings.Join(names, " or "))
	if pgtest.CI() {
		t.Fatal(err)
	}
	t.Skip(err)
	return ""
}

// scrapeNodeExporter starts node_exporter with only the textfile collector
// on a free loopback port, returns one scrape of its /metrics, and stops it.
func scrapeNodeExporter(t *testing.T, exporter, textfiles string) string {
	t.Helper()
	addr, stop := startDaemon(t, "/metrics", func(addr string) *exec.Cmd {
		return exec.Command(exporter, "--web.listen-address="+addr, "--collector.disable-defaults",
			"--collector.textfile", "--collector.textfile.directory="+textfiles)
	})
	defer stop()
	return httpGet(t, "http://"+addr+"/metrics")
}

// httpGet returns the body of url, which must answer 200.
func httpGet(t *testing.T, url string) string {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s, %v", url, resp.Status, err)
	}
	return string(b)
}

// startDaemon starts the daemon command(addr) makes, on a free loopback
// port, and waits until its readiness path answers 200 (60s at most); it
// returns the address and a stop that kills and waits for it. A daemon
// that exits first tried a port taken between Listen and its bind: it is
// started again on another, three times at most.
func startDaemon(t *testing.T, ready string, command func(addr string) *exec.Cmd) (string, func()) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	for attempt := 0; ; attempt++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		var logs bytes.Buffer
		cmd := command(addr)
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		stop := func() {
			cmd.Process.Kill()
			<-exited
		}
		deadline := time.After(60 * time.Second)
	wait:
		for {
			if resp, err := client.Get("http://" + addr + ready); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return addr, stop
				}
			}
			select {
			case err := <-exited:
				exited <- err // for stop's wait
				break wait
			case <-deadline:
				break wait
			case <-time.After(50 * time.Millisecond):
			}
		}
		stop()
		if attempt < 3 {
			t.Logf("%s on %s did not start: %s; again", cmd.Path, addr, logs.String())
			continue
		}
		t.Fatalf("%s on %s did not start; its log:\n%s", cmd.Path, addr, logs.String())
	}
}

// grepLines returns the lines of s that match pattern.
func grepLines(s, pattern string) string {
	re := regexp.MustCompile(pattern)
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if re.MatchString(l) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestMetricsPrometheusScrape serves `ledger metrics` to a real Prometheus
// (Debian's prometheus, which .ci/run installs) on loopback, waits for its
// scrape through its HTTP API, and queries the series as an alert would:
// {tether_job="report"} selects the job's series (its next run and
// lateness too: it runs under a schedule), which carry the target's own
// job label beside it, and the job="JOB" label ledger wrote before (which
// a scrape renames exported_job) would select nothing.
func TestMetricsPrometheusScrape(t *testing.T) {
	t.Parallel()
	prometheus := lookTool(t, "prometheus")

	dir := t.TempDir()
	for _, args := range [][]string{
		{"run", "report", "--schedule", "* * * * *", "--tz", "UTC", "--", "true"},
		{"run", "backup", "--", "sh", "-c", "exit 3"},
	} {
		if out, code, err := runTool(dir, "ledger", args...); err != nil || (code != 0 && code != 3) {
			t.Fatalf("ledger %s = %d, %v; %s", strings.Join(args, " "), code, err, out)
		}
	}
	metrics, code, err := runTool(dir, "ledger", "metrics")
	if err != nil || code != 0 {
		t.Fatalf("ledger metrics = %d, %v; %s", code, err, metrics)
	}

	// The target: what ledger metrics printed, as node_exporter's
	// textfile collector would serve it.
	target, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		io.WriteString(w, metrics)
	})}
	go srv.Serve(target)
	defer srv.Close()

	config := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: node
    static_configs:
      - targets: ['%s']
`, target.Addr())), 0o644); err != nil {
		t.Fatal(err)
	}
	query := startPrometheus(t, prometheus, config, filepath.Join(dir, "tsdb"))

	// The first scrape: the series of report, under the label an alert
	// names.
	var got string
	deadline := time.Now().Add(60 * time.Second)
	for {
		got = query(`tether_live_runs{tether_job="report"}`)
		if strings.Contains(got, `"tether_job":"report"`) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, want := range []string{`"__name__":"tether_live_runs"`, `"tether_job":"report"`, `"job":"node"`} {
		if !strings.Contains(got, want) {
			t.Fatalf("Prometheus's answer to tether_live_runs{tether_job=\"report\"} = %s; want %s in it", got, want)
		}
	}
	for q, want := range map[string]string{
		`tether_last_exit_code{tether_job="backup"}`:                  `"value":[`,
		`tether_runs_total{tether_job="backup",status="failed"}`:      `"1"]`,
		`tether_last_run_success{tether_job="report"} == 1`:           `"tether_job":"report"`,
		`tether_next_run_timestamp_seconds{tether_job="report"} > 0`:  `"tether_job":"report"`,
		`tether_late_seconds{tether_job="report"}`:                    `"tether_job":"report"`,
		`count(tether_live_runs{job="report"}) or vector(0)`:          `"0"]`,
		`count(tether_live_runs{exported_job="report"}) or vector(0)`: `"0"]`,
	} {
		if got := query(q); !strings.Contains(got, want) {
			t.Errorf("Prometheus's answer to %s = %s; want %s in it", q, got, want)
		}
	}
}

// startPrometheus starts prometheus with config on a free loopback port
// (storage in tsdb), stops it when t ends, and returns a query of its
// HTTP API: the JSON of /api/v1/query, once it answers.
func startPrometheus(t *testing.T, prometheus, config, tsdb string) func(q string) string {
	t.Helper()
	addr, stop := startDaemon(t, "/-/ready", func(addr string) *exec.Cmd {
		return exec.Command(prometheus, "--config.file="+config, "--storage.tsdb.path="+tsdb,
			"--web.listen-address="+addr, "--log.level=warn")
	})
	t.Cleanup(stop)
	client := &http.Client{Timeout: 10 * time.Second}
	return func(q string) string {
		resp, err := client.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(q))
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
}
