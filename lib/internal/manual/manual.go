// Package manual is each tether tool's manual in one place: the text that
// --help prints, the package doc comment that `go doc ./lib/cmd/PKG`
// shows and the man page are all made from one Page and the tool's kong
// model, so they cannot drift apart.
//
// Synopsis:
//
//	var Page = manual.Page{Name: "reap", Summary: "...", Synopsis: []string{"[--grace D] -- CMD [ARGS...]"}, ...}
//	t := cli.New(Page.Name, Page.Description)   // --help's description
//	man, err := manual.Man(Page, model)            // roff for man(1)
//	src, err := manual.GoDoc(Page, model, "reap")   // doc.go of lib/cmd/reap (ledger's: lib/cmd/ledgercmd)
//
// Text fields use one small markup that reads well as plain text, as a Go
// doc comment and as roff: paragraphs are separated by a blank line, and a
// line indented by two or more spaces (or a tab) is verbatim, like a Go
// doc comment's code block. A subcommand's detail comes from its kong
// HelpProvider (a Help method) in the same markup.
package manual

import (
	"strings"

	"github.com/alecthomas/kong"
)

// Page is one tool's manual.
type Page struct {
	Name     string   // the command's name: ledger
	Summary  string   // one sentence: the man page's NAME line and --help's first paragraph
	Synopsis []string // usage lines without the name: "[--grace D] -- CMD [ARGS...]"
	Body     string   // the DESCRIPTION: how it behaves, in the markup above
	Examples string   // shell lines, each verbatim; "# " lines are comments
	Exit     string   // the EXIT STATUS paragraph(s)
	SeeAlso  []string // other pages, "adopt(1)"
}

// Description is the text kong prints under --help's usage line: summary,
// body, examples and exit status. Kong interpolates ${var} and $$ in it,
// so every $ is doubled: the text reads as written.
func (p Page) Description() string {
	var b strings.Builder
	b.WriteString(p.Summary)
	if p.Body != "" {
		b.WriteString("\n\n" + p.Body)
	}
	if p.Examples != "" {
		b.WriteString("\n\nExamples:\n" + indent(p.Examples, "  "))
	}
	if p.Exit != "" {
		b.WriteString("\n\nExit status: " + p.Exit)
	}
	return strings.ReplaceAll(b.String(), "$", "$$")
}

// FlagHelp is the help of a flag or argument as --help, the man page and
// the package doc show it: its help text and, where it has a default the
// text does not already state, " (default: D)". It is a
// kong.HelpValueFormatter.
func FlagHelp(v *kong.Value) string {
	h := kong.DefaultHelpValueFormatter(v)
	if !v.HasDefault || v.Default == "" || strings.Contains(h, "default") {
		return h
	}
	suffix := "(default: " + v.Default + ")"
	if strings.HasSuffix(h, ".") {
		return h[:len(h)-1] + " " + suffix + "."
	}
	return strings.TrimSpace(h + " " + suffix)
}

// block is one paragraph of the markup: prose, or verbatim lines.
type block struct {
	verbatim bool
	lines    []string // prose lines are joined by the renderer; verbatim ones are kept
}

// blocks splits text in the markup into paragraphs and verbatim blocks.
// Verbatim lines lose the indentation common to their block.
func blocks(text string) []block {
	var out []block
	var cur *block
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		line = strings.TrimRight(line, " \t")
		if line == "" {
			cur = nil
			continue
		}
		verbatim := strings.HasPrefix(line, "  ") || strings.HasPrefix(line, "\t")
		if cur == nil || cur.verbatim != verbatim {
			out = append(out, block{verbatim: verbatim})
			cur = &out[len(out)-1]
		}
		cur.lines = append(cur.lines, line)
	}
	for i := range out {
		if out[i].verbatim {
			out[i].lines = dedent(out[i].lines)
		}
	}
	return out
}

// dedent removes the leading whitespace all lines share.
func dedent(lines []string) []string {
	common := -1
	for _, l := range lines {
		n := len(l) - len(strings.TrimLeft(l, " \t"))
		if common < 0 || n < common {
			common = n
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l[common:]
	}
	return out
}

// indent prefixes every non-empty line of text.
func indent(text, prefix string) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n")
}

// visibleFlags are node's own flags that --help lists, in order.
func visibleFlags(n *kong.Node) []*kong.Flag {
	var out []*kong.Flag
	for _, f := range n.Flags {
		if !f.Hidden {
			out = append(out, f)
		}
	}
	return out
}

// commands are node's visible subcommands.
func commands(n *kong.Node) []*kong.Node {
	var out []*kong.Node
	for _, c := range n.Children {
		if !c.Hidden && c.Type == kong.CommandNode {
			out = append(out, c)
		}
	}
	return out
}

// flagTerm is how a flag is written in a list: "-q, --quiet",
// "--grace=D".
func flagTerm(f *kong.Flag) string {
	s := "--" + f.Name
	if f.Short != 0 {
		s = "-" + string(f.Short) + ", " + s
	}
	if !f.IsBool() && !f.IsCounter() {
		s += "=" + f.FormatPlaceHolder()
	}
	return s
}

// argTerm is how a positional argument is written in a list.
func argTerm(a *kong.Positional) string {
	s := "<" + a.Name + ">"
	if a.IsCumulative() {
		s += " ..."
	}
	return s
}

// usage is a subcommand's usage line, as --help prints it: "ledger run
// <job> <CMD> ... [flags]".
func usage(root string, c *kong.Node) string {
	return root + " " + strings.TrimSpace(c.Summary())
}

// FlagNames lists the name of every visible flag of the model, the
// subcommands' too, in --help's order: what a test checks each page for.
func FlagNames(k *kong.Kong) []string {
	var names []string
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		for _, f := range visibleFlags(n) {
			names = append(names, f.Name)
		}
		for _, c := range commands(n) {
			walk(c)
		}
	}
	walk(k.Model.Node)
	return names
}
