package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether-sh/tether/lib/internal/argv/argvgen"
	"github.com/tether-sh/tether/lib/internal/manual"
)

// TestGoDocUpToDate is item 6 of issue #11: the package doc of every tool
// is generated from its Page and grammar, and must not drift from them.
func TestGoDocUpToDate(t *testing.T) {
	for _, tl := range tools {
		k, err := tl.model()
		if err != nil {
			t.Fatalf("%s.Model() = %v", tl.page.Name, err)
		}
		want, err := goDoc(tl.page, k)
		if err != nil {
			t.Fatalf("goDoc(%s) = %v", tl.page.Name, err)
		}
		path := filepath.Join("..", pkgName(k), "doc.go")
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale; run: go run ./lib/cmd/tetherdoc -godoc lib/cmd", path)
		}
	}
}

// TestArgvUpToDate: the hot path's parser tables (lib/cmd/PKG/argv_gen.go)
// are generated from the kong model, and must not drift from it.
func TestArgvUpToDate(t *testing.T) {
	for _, tl := range tools {
		k, err := tl.model()
		if err != nil {
			t.Fatalf("%s.Model() = %v", tl.page.Name, err)
		}
		want, err := argvgen.Generate(tl.page.Name, k)
		if err != nil {
			t.Fatalf("argvGen(%s) = %v", tl.page.Name, err)
		}
		path := filepath.Join("..", pkgName(k), "argv_gen.go")
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale; run: go run ./lib/cmd/tetherdoc -godoc lib/cmd -argv lib/cmd", path)
		}
		if tl.help == nil {
			continue
		}
		// ledger's help texts and completion tables, from the same model.
		want, err = argvgen.GenerateExplain(tl.page.Name, k, tl.help)
		if err != nil {
			t.Fatalf("GenerateExplain(%s) = %v", tl.page.Name, err)
		}
		path = filepath.Join("..", pkgName(k), "explain_gen.go")
		if got, err = os.ReadFile(path); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale; run: go run ./lib/cmd/tetherdoc -godoc lib/cmd -argv lib/cmd", path)
		}
	}
}

// TestArgvFast: every command of every tool is served by the generated
// parser (none left wholly to kong by something the generator cannot
// read), and kong's own --help and every hooked flag (--version) are
// left out of the tables.
func TestArgvFast(t *testing.T) {
	for _, tl := range tools {
		k, err := tl.model()
		if err != nil {
			t.Fatal(err)
		}
		src, err := argvgen.Generate(tl.page.Name, k)
		if err != nil {
			t.Fatal(err)
		}
		s := string(src)
		if tl.page.Name == "watchpid" {
			// Its TARGETs are read by a decoder of its own (they end
			// where CMD starts), which the tables cannot follow: kong
			// parses every watchpid line (lib/cmd/watchpid's
			// TestArgvMatchesKong says so).
			continue
		}
		if n := strings.Count(s, "Fast: false"); n > 0 || !strings.Contains(s, "Fast: true") {
			t.Errorf("argv_gen.go of %s has %d nodes left to kong; want none", tl.page.Name, n)
		}
		for _, kongOnly := range []string{`"help"`, `"version"`} {
			if strings.Contains(s, "Names: []string{"+kongOnly) {
				t.Errorf("argv_gen.go of %s takes --%s; want it left to kong", tl.page.Name, strings.Trim(kongOnly, `"`))
			}
		}
	}
}

// TestEveryFlagDocumented: every flag kong knows, the subcommands' too,
// is in the man page and in the package doc.
func TestEveryFlagDocumented(t *testing.T) {
	for _, tl := range tools {
		k, err := tl.model()
		if err != nil {
			t.Fatal(err)
		}
		man := string(manual.Man(tl.page, k))
		doc := string(manual.GoDoc(tl.page, k, pkgName(k)))
		names := manual.FlagNames(k)
		if len(names) < 3 {
			t.Errorf("FlagNames(%s) = %q; want every flag", tl.page.Name, names)
		}
		for _, n := range names {
			if !strings.Contains(man, `\fB\-\-`+strings.ReplaceAll(n, "-", `\-`)+`\fR`) {
				t.Errorf("%s.1 lacks --%s", tl.page.Name, n)
			}
			if !strings.Contains(doc, "--"+n) {
				t.Errorf("package doc of %s lacks --%s", tl.page.Name, n)
			}
		}
		for _, section := range []string{".SH SYNOPSIS", ".SH OPTIONS", ".SH EXIT STATUS", ".SH EXAMPLES"} {
			if !strings.Contains(man, section) {
				t.Errorf("%s.1 lacks %s", tl.page.Name, section)
			}
		}
	}
}

// TestManRenders runs the check .ci/run makes: groff renders each page
// without a warning.
func TestManRenders(t *testing.T) {
	if _, err := exec.LookPath("groff"); err != nil {
		t.Skip("no groff (.ci/run installs it)")
	}
	for _, tl := range tools {
		k, err := tl.model()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("groff", "-man", "-Tutf8", "-ww", "-z")
		cmd.Stdin = bytes.NewReader(manual.Man(tl.page, k))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil || stderr.Len() > 0 {
			t.Errorf("groff -man -Tutf8 -ww -z < %s.1: %v; stderr:\n%s", tl.page.Name, err, stderr.String())
		}
	}
}

func TestCompletions(t *testing.T) {
	files := completions("ledger", "/opt/my tools/bin/ledger")
	want := map[string]string{
		"bash/ledger":      `complete -o default -C '/opt/my tools/bin/ledger' ledger`,
		"zsh/_ledger":      `COMP_POINT=${#line} '/opt/my tools/bin/ledger' 2>/dev/null`,
		"fish/ledger.fish": "\n    '/opt/my tools/bin/ledger'\n",
	}
	if len(files) != len(want) {
		t.Fatalf("completions() = %d files; want %d", len(files), len(want))
	}
	for _, f := range files {
		if !strings.Contains(f.text, want[f.path]) {
			t.Errorf("completions() %s = %q; want it to contain %q", f.path, f.text, want[f.path])
		}
	}
}

func TestShellQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/usr/local/bin/ledger", "/usr/local/bin/ledger"},
		{"/home/me/.local/bin/ledger", "/home/me/.local/bin/ledger"},
		{"/opt/a b/ledger", "'/opt/a b/ledger'"},
		{"/opt/it's/ledger", `'/opt/it'\''s/ledger'`},
		{"/x/$HOME/ledger", "'/x/$HOME/ledger'"},
	} {
		if got := shellQuote(tc.in); got != tc.want {
			t.Errorf("shellQuote(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

// TestLedgerTablesComplete: the tables of ledger, which does not link
// kong, leave nothing to it: its generated parser and usage errors answer
// every command line itself (lib/cmd/ledgercmd's TestExplainMatchesKong).
// A flag the generator cannot read yet is taught to it (argvgen), not
// left to another program.
func TestLedgerTablesComplete(t *testing.T) {
	for _, tl := range tools {
		if tl.help == nil {
			continue // a tool that links kong
		}
		k, err := tl.model()
		if err != nil {
			t.Fatal(err)
		}
		gaps, err := argvgen.LeftToKong(k)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range gaps {
			t.Errorf("%s: %s", tl.page.Name, g)
		}
	}
}
