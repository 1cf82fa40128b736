package ledgercmd

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"testing"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/exit"
)

// parseOnly parses args as run does when the fast path declines (kong)
// without
// running anything: ok is false when parsing stopped with code and a
// message on stderr.
func parseOnly(args []string) (g grammar, ok bool, code int, stderr string) {
	var errb bytes.Buffer
	t := cli.New("ledger", nil)
	t.Stdout, t.Stderr = io.Discard, &errb
	_, code, done := explain(t, &g, args)
	if done {
		return g, false, code, errb.String()
	}
	return g, true, 0, ""
}

// TestRunSpawnArgs: everything before CMD is ledger's flags, so a
// mistyped flag is a usage error and never the command; CMD starts after
// "--", or without it at the first argument that is not a flag.
func TestRunSpawnArgs(t *testing.T) {
	refused := []struct {
		args []string
		msg  string
	}{
		{[]string{"run", "J", "--dedline", "4m", "--", "touch", "ran"}, `unknown flag --dedline, did you mean "--deadline"?`},
		{[]string{"run", "J", "--dedline", "4m", "touch", "ran"}, `unknown flag --dedline, did you mean "--deadline"?`},
		{[]string{"run", "J", "--dedline=4m", "--", "touch"}, `unknown flag --dedline, did you mean "--deadline"?`},
		{[]string{"run", "--instant", "100", "J", "--exclusiv", "--", "true"}, `unknown flag --exclusiv, did you mean "--exclusive"?`},
		{[]string{"--json", "run", "J", "--gace", "1s", "--", "true"}, `unknown flag --gace, did you mean "--grace"?`},
		{[]string{"run", "--ledger", "d", "J", "--jsno", "--", "true"}, `unknown flag --jsno, did you mean "--json"?`},
		{[]string{"--ledger", "d", "run", "J", "-x", "--", "true"}, `unknown flag -x, did you mean "-h"?`},
		{[]string{"spawn", "J", "--wiat", "--", "true"}, `unknown flag --wiat, did you mean "--wait"?`},
		{[]string{"spawn", "--wait", "J", "--ack-timout", "1s", "true"}, `unknown flag --ack-timout, did you mean "--ack-timeout"?`},
		{[]string{"spawn", "J", "--scope", "never", "--lgo", "f", "--", "true"}, `unknown flag --lgo, did you mean "--log"?`},
	}
	for _, tc := range refused {
		_, ok, code, stderr := parseOnly(tc.args)
		if ok || code != exit.NotRun || stderr != "ledger: "+tc.msg+"\n" {
			t.Errorf("parse(%q) = %v, %d, %q; want a runner's usage error 125 %q", tc.args, ok, code, stderr, tc.msg)
		}
	}

	parsed := []struct {
		args  []string
		argv  []string
		flags string // summary(g) of the flags parsed
	}{
		{[]string{"run", "J", "--deadline", "1m", "--", "sh", "-c", "x"}, []string{"sh", "-c", "x"},
			"ledger= json=false deadline=1m0s grace=5s pidns=false"},
		{[]string{"run", "J", "--deadline", "1m", "sh", "-c", "x", "--dedline"}, []string{"sh", "-c", "x", "--dedline"},
			"ledger= json=false deadline=1m0s grace=5s pidns=false"},
		{[]string{"run", "J", "touch", "-x"}, []string{"touch", "-x"},
			"ledger= json=false deadline=0s grace=5s pidns=false"},
		{[]string{"run", "J", "--json", "echo", "--json", "--", "y"}, []string{"echo", "--json", "--", "y"},
			"ledger= json=true deadline=0s grace=5s pidns=false"},
		{[]string{"run", "J", "--", "--dedline"}, []string{"--dedline"},
			"ledger= json=false deadline=0s grace=5s pidns=false"},
		{[]string{"run", "J", "--", "--", "x"}, []string{"--", "x"},
			"ledger= json=false deadline=0s grace=5s pidns=false"},
		{[]string{"--ledger", "d", "run", "--pidns", "J", "--grace=2s", "true"}, []string{"true"},
			"ledger=d json=false deadline=0s grace=2s pidns=true"},
		{[]string{"spawn", "--ledger", "d", "J", "--wait", "--", "true"}, []string{"true"},
			"ledger=d json=false scope=auto wait=true"},
		{[]string{"spawn", "J", "--scope", "never", "sh", "--wait"}, []string{"sh", "--wait"},
			"ledger= json=false scope=never wait=false"},
		// Bytes that are not UTF-8 reach CMD untouched (kong's are mended).
		{[]string{"run", "J", "--", "printf", "%s", "a\xffb\xc3"}, []string{"printf", "%s", "a\xffb\xc3"},
			"ledger= json=false deadline=0s grace=5s pidns=false"},
		{[]string{"run", "J", "/tmp/p\xff", "x"}, []string{"/tmp/p\xff", "x"},
			"ledger= json=false deadline=0s grace=5s pidns=false"},
	}
	for _, tc := range parsed {
		g, ok, code, stderr := parseOnly(tc.args)
		if !ok {
			t.Errorf("parse(%q) = %d %q; want it parsed", tc.args, code, stderr)
			continue
		}
		cmd := g.Run.Cmd
		if g.Spawn.Cmd != nil {
			cmd = g.Spawn.Cmd
		}
		argv, err := commandArgv(tc.args, cmd)
		if err != nil || !reflect.DeepEqual(argv, tc.argv) {
			t.Errorf("parse(%q) CMD = %q, %v; want %q", tc.args, argv, err, tc.argv)
		}
		if got := summary(&g); got != tc.flags {
			t.Errorf("parse(%q) flags = %s; want %s", tc.args, got, tc.flags)
		}
	}
}

// summary describes the flags of the run or spawn subcommand parsed into g.
func summary(g *grammar) string {
	s := fmt.Sprintf("ledger=%s json=%v ", g.Ledger, g.JSON)
	if g.Spawn.Cmd != nil {
		return s + fmt.Sprintf("scope=%s wait=%v", g.Spawn.Scope, g.Spawn.Wait)
	}
	return s + fmt.Sprintf("deadline=%v grace=%v pidns=%v", g.Run.Deadline.D(), g.Run.Grace.D(), g.Run.PIDNS)
}
