package tether_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/rogpeppe/go-internal/txtar"
)

// readmeBlock is one command block of the README (indented four spaces),
// with the marker comment above it that says what runs it.
type readmeBlock struct {
	line    int    // of the block's first line
	harness string // testdata/readme/HARNESS.txtar runs it
	file    string // the name it gets there
	text    string // as written, unindented
}

// marker is the comment above a command block: <!-- test: HARNESS [FILE]
// --> (TestReadmeBlocks runs it: FILE, default block.sh, in the harness
// testdata/readme/HARNESS.txtar), <!-- crontab... --> (.ci/cron installs
// it; TestReadmeBlocks runs its lines too) or <!-- ci: ... --> (.ci/run
// runs it, as for install.sh) or <!-- pg: ... --> (TestLedgerPostgresGrants
// runs the SQL, through readmeSQL).
var marker = regexp.MustCompile(`^<!-- (test|crontab|ci|pg)(?::| )\s*(\S*)\s*(\S*)`)

// readmeBlocks returns the README's command blocks; each without a marker
// is an error.
func readmeBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	lines := strings.Split(mustRead(t, "README.md"), "\n")
	var blocks []readmeBlock
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "    ") || i > 0 && lines[i-1] != "" {
			continue
		}
		start := i
		var text []string
		for ; i < len(lines) && (strings.HasPrefix(lines[i], "    ") || lines[i] == ""); i++ {
			text = append(text, strings.TrimPrefix(lines[i], "    "))
		}
		prev := start - 1
		for prev >= 0 && lines[prev] == "" {
			prev--
		}
		m := []string(nil)
		if prev >= 0 {
			m = marker.FindStringSubmatch(lines[prev])
		}
		if m == nil {
			t.Errorf("README.md:%d: a command block with no marker above it saying what runs it (<!-- test: HARNESS [FILE] -->)", start+1)
			continue
		}
		b := readmeBlock{line: start + 1, text: strings.TrimRight(strings.Join(text, "\n"), "\n") + "\n"}
		switch m[1] {
		case "ci":
			// Its first line as written (the test command with its
			// flags, not only its program's name).
			first, _, _ := strings.Cut(b.text, "\n")
			if !strings.Contains(mustRead(t, ".ci/run"), first) {
				t.Errorf("README.md:%d: says .ci/run runs it; .ci/run does not run %q", b.line, first)
			}
			continue
		case "pg":
			continue
		case "crontab":
			b.harness, b.file = "crontab", "crontab"
		default:
			b.harness, b.file = m[2], cmpOr(m[3], "block.sh")
		}
		blocks = append(blocks, b)
	}
	return blocks
}

func cmpOr(s, def string) string {
	if s == "" || s == "-->" {
		return def
	}
	return s
}

// crontabScript turns a crontab as the README writes it into the shell
// script cron would run: its variables exported, its commands as cron runs
// them (\% is %), /home/me (which the README says stands for your home) as
// $HOME.
func crontabScript(crontab string) string {
	schedule := regexp.MustCompile(`^(?:[*0-9/,-]+\s+){5}(.*)$`)
	variable := regexp.MustCompile(`^[A-Z_]+=`)
	var b strings.Builder
	b.WriteString("set -e\n")
	for _, l := range strings.Split(crontab, "\n") {
		l = strings.ReplaceAll(l, "/home/me", "$HOME")
		switch {
		case strings.HasPrefix(l, "TETHER_LEDGER=postgres://"):
			// The README says db.example.net stands for your database.
			name, value, _ := strings.Cut(l, "=")
			fmt.Fprintf(&b, "export %s=\"${TETHER_LEDGER_STANDIN:-%s}\"\n", name, value)
		case variable.MatchString(l):
			fmt.Fprintf(&b, "export %s\n", l)
		case schedule.MatchString(l):
			b.WriteString(strings.ReplaceAll(schedule.FindStringSubmatch(l)[1], `\%`, "%") + "\n")
		}
	}
	return b.String()
}

// TestReadmeBlocks runs every command block of the README as written, in
// the harness its marker names (testdata/readme/*.txtar), which holds only
// the stand-ins the README itself names (your job, your home) and checks
// what the README says the block does.
func TestReadmeBlocks(t *testing.T) {
	t.Parallel()
	blocks := readmeBlocks(t)
	harnesses := map[string]*txtar.Archive{}
	for _, b := range blocks {
		ar, ok := harnesses[b.harness]
		if !ok {
			data, err := os.ReadFile(filepath.Join("testdata/readme", b.harness+".txtar"))
			if err != nil {
				t.Errorf("README.md:%d: %v", b.line, err)
				continue
			}
			ar = txtar.Parse(data)
			harnesses[b.harness] = ar
		}
		ar.Files = append(ar.Files, txtar.File{Name: b.file, Data: []byte(b.text)})
		if b.file == "crontab" {
			ar.Files = append(ar.Files, txtar.File{Name: "crontab.sh", Data: []byte(crontabScript(b.text))})
		}
	}
	all, _ := filepath.Glob("testdata/readme/*.txtar")
	for _, f := range all {
		if name := strings.TrimSuffix(filepath.Base(f), ".txtar"); harnesses[name] == nil {
			t.Errorf("%s runs no block of the README", f)
		}
	}
	dir := t.TempDir()
	var files []string
	for name, ar := range harnesses {
		f := filepath.Join(dir, name+".txtar")
		if err := os.WriteFile(f, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	slices.Sort(files)
	p := scenarioParams("", nil)
	p.Files = files
	testscript.Run(t, p)
}

// readmeSQL returns the README's SQL block (the one marked <!-- pg: -->),
// as written but for the README's role tether_jobs, which becomes role:
// roles belong to the whole server, and each run names its own.
func readmeSQL(t *testing.T, role string) string {
	t.Helper()
	s := mustRead(t, "README.md")
	_, after, ok := strings.Cut(s, "\n<!-- pg:")
	if !ok {
		t.Fatal("README.md: no <!-- pg: --> block")
	}
	var sql []string
	for _, l := range strings.Split(after, "\n")[2:] {
		if !strings.HasPrefix(l, "    ") {
			break
		}
		sql = append(sql, strings.TrimPrefix(l, "    "))
	}
	return strings.ReplaceAll(strings.Join(sql, "\n"), "tether_jobs", role)
}
