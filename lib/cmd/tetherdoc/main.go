// Command tetherdoc writes what is made from each tool's manual.Page and
// kong model: the package doc (lib/cmd/PKG/doc.go), the hot path's parser
// tables (lib/cmd/PKG/argv_gen.go, see lib/internal/argv), ledger's help
// texts and completion tables (lib/cmd/ledgercmd/explain_gen.go), the man pages
// and the shell completion files. PKG is the tool's package: the tool's
// name (lib/cmd/adopt), but lib/cmd/ledgercmd for ledger, which would
// otherwise share its name with the store's package lib/ledger. install.sh runs it for the man pages and
// completions; doc.go and argv_gen.go are committed, and TestGoDocUpToDate
// and TestArgvUpToDate fail when one is stale.
//
// Synopsis:
//
//	go run ./lib/cmd/tetherdoc -godoc lib/cmd -argv lib/cmd     # regenerate lib/cmd/PKG/{doc,argv_gen}.go
//	go run ./lib/cmd/tetherdoc -man DIR                          # DIR/TOOL.1
//	go run ./lib/cmd/tetherdoc -completion DIR -bindir /usr/bin  # DIR/{bash,zsh,fish}/...
//go:generate go run . -godoc .. -argv ..

package main

import (
	"flag"
	"fmt"
	"go/format"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/tether-sh/tether/lib/cmd/adopt"
	"github.com/tether-sh/tether/lib/cmd/ledgercmd/ledgerkong"
	"github.com/tether-sh/tether/lib/cmd/reap"
	"github.com/tether-sh/tether/lib/cmd/stopbounded"
	"github.com/tether-sh/tether/lib/cmd/watchpid"
	"github.com/tether-sh/tether/lib/internal/argv/argvgen"
	"github.com/tether-sh/tether/lib/internal/manual"
)

// tool is one tool's manual and model.
type tool struct {
	page  manual.Page
	model func() (*kong.Kong, error)
	// help is the --help of a command path, for a tool that does not
	// link kong and says it from explain_gen.go (ledger).
	help func(path []string) (string, error)
}

var tools = []tool{
	{ledgerkong.Page, ledgerkong.Model, ledgerkong.Help},
	{adopt.Page, adopt.Model, nil},
	{watchpid.Page, watchpid.Model, nil},
	{stopbounded.Page, stopbounded.Model, nil},
	{reap.Page, reap.Model, nil},
}

func main() {
	godoc := flag.String("godoc", "", "write `DIR`/PKG/doc.go (DIR is lib/cmd)")
	argvDir := flag.String("argv", "", "write `DIR`/PKG/argv_gen.go (DIR is lib/cmd)")
	man := flag.String("man", "", "write `DIR`/TOOL.1")
	comp := flag.String("completion", "", "write `DIR`/bash/TOOL, DIR/zsh/_TOOL and DIR/fish/TOOL.fish")
	bindir := flag.String("bindir", "", "the completion files run the tools from `DIR` (absolute)")
	flag.Parse()
	if flag.NArg() > 0 || (*godoc == "" && *argvDir == "" && *man == "" && *comp == "") {
		fmt.Fprintln(os.Stderr, "usage: tetherdoc [-godoc DIR] [-argv DIR] [-man DIR] [-completion DIR -bindir DIR]")
		os.Exit(2)
	}
	if *comp != "" && !filepath.IsAbs(*bindir) {
		fmt.Fprintln(os.Stderr, "tetherdoc: -completion needs an absolute -bindir")
		os.Exit(2)
	}
	for _, t := range tools {
		if err := write(t, *godoc, *argvDir, *man, *comp, *bindir); err != nil {
			fmt.Fprintf(os.Stderr, "tetherdoc: %s: %v\n", t.page.Name, err)
			os.Exit(1)
		}
	}
}

func write(t tool, godoc, argvDir, man, comp, bindir string) error {
	k, err := t.model()
	if err != nil {
		return err
	}
	name := t.page.Name
	if godoc != "" {
		src, err := goDoc(t.page, k)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(godoc, pkgName(k), "doc.go"), src, 0o644); err != nil {
			return err
		}
	}
	if argvDir != "" {
		src, err := argvgen.Generate(name, k)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(argvDir, pkgName(k), "argv_gen.go"), src, 0o644); err != nil {
			return err
		}
		if t.help != nil {
			src, err := argvgen.GenerateExplain(name, k, t.help)
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(argvDir, pkgName(k), "explain_gen.go"), src, 0o644); err != nil {
				return err
			}
		}
	}
	if man != "" {
		if err := writeFile(filepath.Join(man, name+".1"), manual.Man(t.page, k)); err != nil {
			return err
		}
	}
	if comp != "" {
		for _, f := range completions(name, filepath.Join(bindir, name)) {
			if err := writeFile(filepath.Join(comp, f.path), []byte(f.text)); err != nil {
				return err
			}
		}
	}
	return nil
}

func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// goDoc is the gofmt'ed doc.go of a tool's package.
func goDoc(p manual.Page, k *kong.Kong) ([]byte, error) {
	return format.Source(manual.GoDoc(p, k, pkgName(k)))
}

// pkgName is the name of the package of the tool whose model is k, the
// package of its grammar: also its folder under lib/cmd.
func pkgName(k *kong.Kong) string { return path.Base(k.Model.Target.Type().PkgPath()) }

type file struct{ path, text string }

// completions are the shell files that complete tool by running bin with
// COMP_LINE set (lib/cli answers through kongplete). They name the binary
// by its absolute path, so that another program of the same name earlier
// on PATH (Debian's accounting ledger) is never run to complete ours.
func completions(tool, bin string) []file {
	q := shellQuote(bin)
	fn := "_tether_" + tool
	return []file{
		{"bash/" + tool, fmt.Sprintf("# bash completion for %s (tether); generated by tetherdoc.\ncomplete -o default -C %s %s\n", tool, q, tool)},
		{"zsh/_" + tool, fmt.Sprintf(`#compdef %[1]s
# zsh completion for %[1]s (tether); generated by tetherdoc.
local line="${(j: :)words[1,CURRENT]}"
local -a reply
reply=(${(f)"$(COMP_LINE="$line" COMP_POINT=${#line} %[2]s 2>/dev/null)"})
(( ${#reply} )) || { _files; return }
compadd -- "${reply[@]}"
`, tool, q)},
		{"fish/" + tool + ".fish", fmt.Sprintf(`# fish completion for %[1]s (tether); generated by tetherdoc.
function %[3]s
    set -lx COMP_LINE (commandline -cp)
    test -z (commandline -ct)
    and set COMP_LINE "$COMP_LINE "
    %[2]s
end
complete -c %[1]s -f -a '(%[3]s)'
`, tool, q, fn)},
	}
}

// shellQuote quotes s for sh, zsh and fish alike.
func shellQuote(s string) string {
	if strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
