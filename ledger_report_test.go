//go:build linux

package tether_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether-sh/tether/internal/pgtest"
)

// TestReportChromium renders `ledger report --html` of a store whose
// outputs, notes, errors and sources are hostile, in a real headless
// browser (Debian's chromium; .ci/run installs it): the DOM chromium
// builds holds the hostile text as text, no element it would have
// injected, every job, and nothing that names a URL; a screenshot is
// taken too (kept where $TETHER_REPORT_SCREENSHOT says, for a person to
// look at). Without chromium it is skipped, or fails when CI=true.
func TestReportChromium(t *testing.T) {
	t.Parallel()
	chromium := lookChromium(t)
	dir := t.TempDir()
	ledger := func(args ...string) string {
		t.Helper()
		out, code, err := runTool(dir, "ledger", args...)
		// run exits with its command's status; 125 is its own failure
		if err != nil || code == 2 || code == 3 || code == 125 {
			t.Fatalf("ledger %s = %d, %v; %s", strings.Join(args, " "), code, err, out)
		}
		return strings.TrimSpace(out)
	}
	ledger("run", "plain", "--", "true")
	ledger("run", "nightly", "--schedule", "0 2 * * *", "--tz", "UTC", "--catch-up", "--", "true")
	for range 30 {
		ledger("run", "plain", "--", "sh", "-c", "sleep 0.0$(($$ % 10)); exit $(($$ % 3 == 0))")
	}
	ledger("run", "script", "--", "sh", "-c", `echo '<script>alert(1)</script>'; exit 7`)
	ledger("run", "bytes", "--", "sh", "-c", `printf 'a\377\376b\000c\033[31md\n'; exit 4`)
	ledger("run", "long", "--", "sh", "-c", `head -c 65536 /dev/zero | tr '\0' x; exit 5`)
	id := ledger("claim", "a:b@c.d-e_f", "--owner", "1", "--source", `"><img src=x onerror=alert(2)>`)
	ledger("beat", id, "--note", `</style><style>body{display:none}</style>`)
	failed := ledger("claim", "a:b@c.d-e_f", "--owner", "1")
	ledger("finish", failed, "--status", "failed", "--error", `</title></svg><svg onload=alert(3)>`)
	jobs := []string{"plain", "nightly", "script", "bytes", "long", "a:b@c.d-e_f"}

	page := filepath.Join(dir, "report.html")
	if out, code, err := runTool(dir, "ledger", "report", "--html", page, "--tail", "64K"); err != nil || code != 0 {
		t.Fatalf("ledger report --html = %d, %v; %s", code, err, out)
	}
	src, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	// Nothing the page could fetch: no URL, no url(), no import; and
	// no tag with a src or an href but to a job of its own.
	for _, bad := range []string{"http://", "https://", "url(", "@import"} {
		if bytes.Contains(bytes.ToLower(src), []byte(bad)) {
			t.Errorf("the report holds %q; want a page that fetches nothing", bad)
		}
	}
	for _, tag := range parseTags(string(src)) {
		for name, value := range tag.attrs {
			if name == "src" || strings.HasPrefix(name, "on") || (name == "href" && !strings.HasPrefix(value, "#job-")) {
				t.Errorf("the report has a <%s %s=%q>; want no fetch, no handler", tag.name, name, value)
			}
		}
	}

	dom := runChromium(t, chromium, "--dump-dom", "file://"+page)
	for _, want := range []string{
		`&lt;script&gt;alert(1)&lt;/script&gt;`,
		`&lt;/style&gt;&lt;style&gt;body{display:none}&lt;/style&gt;`,
		`"&gt;&lt;img src=x onerror=alert(2)&gt;`,
		`&lt;/title&gt;&lt;/svg&gt;&lt;svg onload=alert(3)&gt;`,
		"a\uFFFDb␀c␛[31md",
		strings.Repeat("x", 65536),
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("chromium's DOM does not hold %.80q as text", want)
		}
	}
	// The elements chromium built: the page's own, none injected.
	counts := map[string]int{}
	for _, tag := range parseTags(dom) {
		counts[tag.name]++
		for name := range tag.attrs {
			if strings.HasPrefix(name, "on") || name == "src" {
				t.Errorf("chromium's DOM has a <%s %s>; want no injected attribute", tag.name, name)
			}
		}
	}
	for name, want := range map[string]int{"script": 0, "img": 0, "link": 0, "iframe": 0, "style": 1, "svg": len(jobs), "section": len(jobs), "title": 1 + len(jobs)*2} {
		if counts[name] < want || (name != "title" && counts[name] != want) {
			t.Errorf("chromium's DOM holds %d <%s>; want %d", counts[name], name, want)
		}
	}
	for _, j := range jobs {
		if !strings.Contains(dom, `<section class="job" id="job-`+j+`"`) {
			t.Errorf("chromium's DOM has no section for job %s", j)
		}
	}
	if !regexp.MustCompile(`Store: <code class="store">[^<]*/state/tether/ledger</code>`).MatchString(dom) {
		t.Errorf("chromium's DOM does not name the store")
	}
	if !strings.Contains(dom, `<code class="schedule">CRON_TZ=UTC 0 2 * * *</code>, next slot`) {
		t.Errorf("chromium's DOM does not show nightly's schedule")
	}

	png := filepath.Join(dir, "report.png")
	runChromium(t, chromium, "--screenshot="+png, "--window-size=1200,1600", "file://"+page)
	shot, err := os.ReadFile(png)
	if err != nil || !bytes.HasPrefix(shot, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("chromium --screenshot wrote no PNG: %v", err)
	}
	if keep := os.Getenv("TETHER_REPORT_SCREENSHOT"); keep != "" {
		if err := os.WriteFile(keep, shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// tag is an element's start tag: its name and attributes.
type tag struct {
	name  string
	attrs map[string]string
}

// parseTags reads the start tags of an HTML serialization as a browser
// writes it (every < of a text escaped, attribute values double-quoted
// with their " escaped), enough to count elements and attributes.
func parseTags(s string) []tag {
	var tags []tag
	attr := regexp.MustCompile(`^\s*([^\s=/>]+)(?:="([^"]*)"|=([^\s>]*))?`)
	for {
		i := strings.IndexByte(s, '<')
		if i < 0 {
			return tags
		}
		s = s[i+1:]
		if s == "" || !('a' <= s[0]|0x20 && s[0]|0x20 <= 'z') {
			continue // an end tag, a comment, the doctype
		}
		n := strings.IndexAny(s, " \t\n/>")
		if n < 0 {
			return tags
		}
		t := tag{name: strings.ToLower(s[:n]), attrs: map[string]string{}}
		s = s[n:]
		for {
			m := attr.FindStringSubmatch(s)
			if m == nil {
				break
			}
			t.attrs[strings.ToLower(m[1])] = m[2] + m[3]
			s = s[len(m[0]):]
		}
		tags = append(tags, t)
	}
}

// lookChromium is chromium's path, or skips t (fails it when CI=true).
func lookChromium(t *testing.T) string {
	t.Helper()
	for _, n := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	msg := "chromium not found in $PATH; install Debian's chromium (apt-get install --no-install-recommends chromium) to render ledger report in a browser"
	if pgtest.CI() {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// runChromium runs headless chromium with args, in a profile, HOME and
// TMPDIR of its own, removed once it exits, offline, and returns its
// stdout. Its process group is killed once it exits, in case a helper of
// it outlived it. The folder is right under $TMPDIR, not t's (deeper):
// chromium's socket in it must fit a socket address (108 bytes).
func runChromium(t *testing.T, chromium string, args ...string) string {
	t.Helper()
	profile, err := os.MkdirTemp("", "chromium-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(profile)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, chromium, append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + profile,
	}, args...)...)
	c.Env = append(os.Environ(), "TMPDIR="+profile, "HOME="+profile)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	err = c.Run()
	if c.Process != nil {
		syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	}
	if err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return stdout.String()
}
