// Package ledgerkong is ledger with kong's model of its command line
// linked in: --help, usage errors in tether's words, a shell's completion,
// and the man page, package doc and the ledger binary's help texts and
// completion tables (lib/cmd/ledgercmd/explain_gen.go) made from Page and
// the model. The ledger binary (lib/cmd/ledgercmd.Main) does not link it,
// so that its start-up never pays for kong, and never needs it: its
// generated parser and usage errors answer every command line as this
// model does (TestUsageErrorsMatchKong here, TestExplainMatchesKong and
// FuzzExplain there). tether-pg runs Main for a PostgreSQL store, and
// lib.Tools runs it in process.
//
//	os.Exit(ledgerkong.Main(os.Args[1:]))
package ledgerkong

import (
	"fmt"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/cli/kongcli"
	"github.com/tether-sh/tether/lib/cmd/ledgercmd"
)

// Main runs ledger with args (without the program name), explaining in
// process what the generated parser does not take, and returns its exit
// code.
func Main(args []string) int { return ledgercmd.MainWith(args, Explain) }

// Explain is a ledgercmd.Explainer: kong's model parses args into g (a
// command line the generated parser did not take), prints help, a usage
// error (2, or 125 for run and spawn) or a shell's completions, or
// returns the command it selected.
func Explain(t *cli.Tool, g any, args []string) (cmd ledgercmd.Runner, code int, done bool) {
	kt := tool(t)
	if cli.Completing() {
		kt.Predictors = predictors()
	}
	ctx, code, done := kt.Parse(g, args)
	if done {
		return nil, code, true
	}
	return ctx, 0, false
}

// tool is t as kong parses for ledger.
func tool(t *cli.Tool) *kongcli.Tool {
	t.Describe = Page.Description
	return &kongcli.Tool{
		Tool: t,
		RunsCommand: func(ctx *kong.Context, args []string) bool {
			return ctx != nil && ledgercmd.RunsCommand(args)
		},
	}
}

// Model returns kong's model of ledger's command line, as --help sees it.
func Model() (*kong.Kong, error) {
	return tool(cli.New(Page.Name, nil)).Model(ledgercmd.Grammar())
}

// Help returns the --help kong's model prints for the command path p
// ("run", or none for ledger's own), for the ledger binary's generated
// help texts (lib/cmd/ledgercmd/explain_gen.go).
func Help(p []string) (string, error) {
	var out, errs strings.Builder
	t := cli.New(Page.Name, nil)
	t.Stdout, t.Stderr = &out, &errs
	var g = ledgercmd.Grammar()
	if _, code, done := tool(t).Parse(g, append(append([]string(nil), p...), "--help")); !done || code != 0 {
		return "", fmt.Errorf("kong printed no help (exit %d): %s", code, errs.String())
	}
	return out.String(), nil
}
