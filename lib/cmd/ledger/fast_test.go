package ledger

import (
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/tether-sh/tether/lib/cli"
)

// kongParse parses args with kong and the full grammar: what run does when
// the fast path declines. cmd is the subcommand's name, "" if kong refused
// the arguments or served help.
func kongParse(args []string) (g grammar, cmd string) {
	t := cli.New("ledger", description)
	t.Stdout, t.Stderr = io.Discard, io.Discard
	ctx, _, done := t.Parse(&g, args)
	if done {
		return g, ""
	}
	return g, strings.Fields(ctx.Command())[0]
}

// checkFast fails t if the fast path accepts args but kong would parse
// them differently or not at all, and reports whether it accepted them.
func checkFast(t *testing.T, args []string) bool {
	t.Helper()
	var fast grammar
	cmd, run := fastParse(&fast, args)
	if cmd == "" {
		return false
	}
	if run == nil {
		t.Fatalf("fastParse(%q) accepted %s without a Run", args, cmd)
	}
	slow, kongCmd := kongParse(args)
	if kongCmd != cmd {
		t.Fatalf("fastParse(%q) = %q; kong parses %q", args, cmd, kongCmd)
	}
	// Kong also fills in the defaults of subcommands that did not run:
	// compare the global flags and the subcommand that runs.
	if fast.Ledger != slow.Ledger || fast.JSON != slow.JSON || fast.VersionFlag != slow.VersionFlag {
		t.Fatalf("fastParse(%q) globals = %q %v %v; kong parses %q %v %v", args,
			fast.Ledger, fast.JSON, fast.VersionFlag, slow.Ledger, slow.JSON, slow.VersionFlag)
	}
	f, k := subcommand(&fast, cmd), subcommand(&slow, cmd)
	if !reflect.DeepEqual(f, k) {
		t.Fatalf("fastParse(%q) %s = %+v; kong parses %+v", args, cmd, f, k)
	}
	return true
}

// subcommand returns the field of g's commands that kong names cmd.
func subcommand(g *grammar, cmd string) any {
	v := reflect.ValueOf(&g.commands).Elem()
	for i := 0; i < v.NumField(); i++ {
		if kongName(v.Type().Field(i)) == cmd {
			return v.Field(i).Interface()
		}
	}
	panic("no subcommand " + cmd)
}

func TestFastParseMatchesKong(t *testing.T) {
	const id = "0dn81anxuj0hf-51gz31"
	// What wrappers run on every execution: all taken by the fast path.
	accepted := [][]string{
		{"claim", "backup"},
		{"claim", "backup", "--owner", "123"},
		{"claim", "backup", "--owner=123@456789"},
		{"--ledger", "/tmp/st", "claim", "backup", "--owner", "1", "--instant", "2026-11-29T10:00:00+01:00", "--exclusive", "--source", "cron"},
		{"claim", "--instant", "1700000000", "backup", "--json"},
		{"--json", "claim", "a.b:c@d-e_f"},
		{"fence", id},
		{"adopt", id, "--owner", "77"},
		{"start", id},
		{"start", id, "--owner", "42@1000"},
		{"--ledger=/x", "finish", id, "--status", "completed", "--exit-code", "0"},
		{"finish", "--status=failed", id, "--exit-code=137", "--error", "killed: TERM"},
		{"finish", id, "--status", "failed", "--error", "x --y"},
		{"finish", id, "--status", "completed", "--exit-code", "256"},
		{"show", id},
		{"show", id, "--field", "status", "--ledger", "d"},
		{"show", "../../etc/passwd"},
		{"latest", "backup", "--json"},
		{"latest", "backup", "--field=owner.pid"},
		{"show", "start"},
		{"--lock-timeout", "5s", "claim", "backup"},
		{"start", id, "--lock-timeout=0"},
	}
	// Left to kong: help, refusals and anything it might read differently.
	declined := [][]string{
		{},
		{"--json"},
		{"claim"},
		{"claim", "a", "b"},
		{"claim", "job", "--help"},
		{"claim", "job", "-h"},
		{"-h", "claim", "job"},
		{"--version"},
		{"claim", "job", "--owner"},
		{"claim", "job", "--owner", "-1"},
		{"claim", "job", "--owner", "0x10"},
		{"claim", "job", "--owner", "1", "--owner", "2"},
		{"claim", "job", "--instant", "tomorrow"},
		{"claim", "job", "--exclusive=true"},
		{"claim", "job", "--source="},
		{"claim", "job", "--field", "id"},
		{"--owner", "1", "claim", "job"},
		{"claim", "--", "job"},
		{"claim", "-"},
		{"claim", ""},
		{"finish", id},
		{"finish", id, "--status", "done"},
		{"finish", id, "--status", "completed", "--exit-code", "010"},
		{"finish", id, "--status", "completed", "--exit-code", "0x1"},
		{"finish", id, "--status", "completed", "--exit-code", "1_0"},
		{"finish", id, "--status", "completed", "--exit-code", "-1"},
		{"finish", id, "--status", "completed", "--exit-code", "+1"},
		{"finish", id, "--status", "completed", "--exit-code", "99999999999999999999"},
		{"finish", id, "--status", "failed", "--error", "-x"},
		{"list"},
		{"recover"},
		{"prune", "--keep", "1"},
		{"run", "job", "--", "true"},
		{"spawn", "job", "--", "true"},
		{"bogus", id},
		{"show", id, "--ledger"},
		{"show", id, "--json", "--json"},
		{"show", id, "--json=false"},
		{"start", id, "--lock-timeout", "soon"},
	}
	for _, args := range accepted {
		if !checkFast(t, args) {
			t.Errorf("fastParse(%q) declined; want it taken without kong", args)
		}
	}
	for _, args := range declined {
		if checkFast(t, args) {
			t.Errorf("fastParse(%q) accepted; want it left to kong", args)
		}
	}
}

// FuzzFastParse checks that whatever the fast path accepts, kong parses to
// the same values. The input is the argument list joined by newlines.
func FuzzFastParse(f *testing.F) {
	for _, s := range []string{
		"claim\njob\n--owner\n123\n--instant\n1700000000\n--exclusive",
		"--ledger=/d\nfinish\n0abc\n--status\ncompleted\n--exit-code\n0",
		"finish\n0abc\n--status=failed\n--error\nboom",
		"start\n0abc\n--owner=1@2",
		"show\n0abc\n--field\nstatus\n--json",
		"latest\njob\n--ledger\nd",
		"adopt\n0abc",
		"fence\n0abc",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkFast(t, strings.Split(s, "\n"))
	})
}

// kongName is the command name kong derives from a field: its name tag, or
// the field name in kebab case.
func kongName(f reflect.StructField) string {
	if n := f.Tag.Get("name"); n != "" {
		return n
	}
	var b strings.Builder
	for i, r := range f.Name {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('-')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}
