package manual

import (
	"bytes"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain text", "plain text"},
		{"--grace=D", `\-\-grace=D`},
		{`a\b`, `a\eb`},
		{".starts with a dot", `\&.starts with a dot`},
		{"'quote", `\&'quote`},
		{"claimed → running", `claimed \[u2192] running`},
	} {
		if got := escape(tc.in); got != tc.want {
			t.Errorf("escape(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

func TestBlocks(t *testing.T) {
	got := blocks("one\ntwo\n\n  code a\n    code b\nthree\n")
	want := []block{
		{false, []string{"one", "two"}},
		{true, []string{"code a", "  code b"}},
		{false, []string{"three"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("blocks() = %#v; want %#v", got, want)
	}
}

func TestDescriptionEscapesDollars(t *testing.T) {
	p := Page{Summary: "S.", Body: "b $HOME", Examples: "x --owner $$", Exit: "0 ok."}
	got := p.Description()
	want := "S.\n\nb $$HOME\n\nExamples:\n  x --owner $$$$\n\nExit status: 0 ok."
	if got != want {
		t.Errorf("Description() = %q; want %q", got, want)
	}
}

func TestFlagHelp(t *testing.T) {
	type grammar struct {
		Grace  string `default:"5s" help:"Wait at most D."`
		Signal string `default:"TERM" help:"First signal"`
		Told   string `default:"60s" help:"Give up after D (default 60s)."`
		Plain  string `help:"No default."`
		Empty  string `default:"" help:"Empty default."`
	}
	k, err := kong.New(&grammar{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"grace":  "Wait at most D (default: 5s).",
		"signal": "First signal (default: TERM)",
		"told":   "Give up after D (default 60s).",
		"plain":  "No default.",
		"empty":  "Empty default.",
	}
	for _, f := range k.Model.Flags {
		w, ok := want[f.Name]
		if !ok {
			continue
		}
		if got := FlagHelp(f.Value); got != w {
			t.Errorf("FlagHelp(--%s) = %q; want %q", f.Name, got, w)
		}
	}
}

func TestManAndGoDoc(t *testing.T) {
	type sub struct {
		Keep int `placeholder:"N" help:"Keep N." default:"3"`
	}
	type grammar struct {
		Quiet bool `short:"q" help:"Say nothing."`
		Prune sub  `cmd:"" help:"Delete records."`
	}
	k, err := kong.New(&grammar{}, kong.Name("tool"))
	if err != nil {
		t.Fatal(err)
	}
	p := Page{Name: "tool", Summary: "Does things.", Synopsis: []string{"[-q] prune"}, Body: "Body.\n\n  verbatim $HOME", Examples: "tool prune", Exit: "0 done.", SeeAlso: []string{"ledger(1)"}}
	man := string(Man(p, k))
	for _, want := range []string{".TH TOOL 1", "tool \\- Does things", ".SH OPTIONS", `\fB\-q\fR, \fB\-\-quiet\fR`, `.SS "tool prune [flags]"`, `\fB\-\-keep\fR=\fIN\fR`, "Keep N (default: 3).", ".nf\nverbatim $HOME\n.fi", ".SH EXIT STATUS", `\fBledger\fR(1)`} {
		if !strings.Contains(man, want) {
			t.Errorf("Man() lacks %q:\n%s", want, man)
		}
	}
	doc := string(GoDoc(p, k, "tool"))
	for _, want := range []string{"// Package tool is the tool tool: does things.", "//\ttool [-q] prune", "//   - -q, --quiet: Say nothing.", "// # Commands", "//   - --keep=N: Keep N (default: 3).", "//\tverbatim $HOME", "\npackage tool\n"} {
		if !strings.Contains(doc, want) {
			t.Errorf("GoDoc() lacks %q:\n%s", want, doc)
		}
	}
}

// TestManASCII: a page read in the C locale (LC_ALL=C man, groff -Tascii)
// keeps every character of its text, the state diagram's arrows too, as
// ASCII, and the UTF-8 rendering keeps the page's own characters.
func TestManASCII(t *testing.T) {
	groff, err := exec.LookPath("groff")
	if err != nil {
		t.Skip("needs groff")
	}
	k, err := kong.New(&struct{}{}, kong.Name("tool"))
	if err != nil {
		t.Fatal(err)
	}
	p := Page{Name: "tool", Summary: "Does things.", Body: "Diagram:\n\n  claimed ──fence──▶ fenced → running ◀── x × y\n"}
	for _, tc := range []struct{ device, want string }{
		{"ascii", "claimed --fence--> fenced -> running <-- x x y"},
		{"utf8", "claimed ──fence──▶ fenced → running ◀── x × y"},
	} {
		cmd := exec.Command(groff, "-man", "-ww", "-T"+tc.device)
		cmd.Stdin = bytes.NewReader(Man(p, k))
		cmd.Env = append(os.Environ(), "LC_ALL=C")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil || stderr.Len() > 0 {
			t.Errorf("groff -T%s: %v: %s", tc.device, err, stderr.Bytes())
		}
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("groff -T%s of Man() lacks %q:\n%s", tc.device, tc.want, out)
		}
	}
}
