package ledger

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/internal/shortcut"
)

// A ledger call in a wrapper is one short process, and building kong's
// model by reflection and parsing through it is half a millisecond of it:
// more than the record's fsyncs. So the command lines wrappers run on
// every execution — claim, fence, adopt, start, finish, show, latest with
// their plain flags — are parsed here, into the same grammar struct, and
// run by the same Run methods. The fast parser accepts only what it is
// sure kong would parse to the same values; anything else (help, an
// unknown, repeated or abbreviated flag, a value that starts with "-", an
// empty value or one that is not UTF-8, a value kong's mappers would read
// differently, a missing argument) goes to kong, which parses it or
// reports the error. TestFastParseMatchesKong and FuzzFastParse hold the
// two together.

// fastFlag says how a --name is taken: as a switch or with a value.
type fastFlag int

const (
	noFlag fastFlag = iota
	switchFlag
	valueFlag
)

// fastFlagOf says how subcommand cmd takes --name, for the subcommands
// the fast path serves; known is false for any other subcommand. The
// global --ledger, --json and --lock-timeout are handled by the caller.
func fastFlagOf(cmd, name string) (kind fastFlag, known bool) {
	switch cmd {
	case "claim":
		switch name {
		case "source", "instant", "owner":
			return valueFlag, true
		case "exclusive":
			return switchFlag, true
		}
	case "adopt", "start":
		if name == "owner" {
			return valueFlag, true
		}
	case "finish":
		switch name {
		case "status", "exit-code", "error":
			return valueFlag, true
		}
	case "show", "latest":
		if name == "field" {
			return valueFlag, true
		}
	case "fence":
	default:
		return noFlag, false
	}
	return noFlag, true
}

// fastParse parses args into g if they are one of the simple command lines
// above and returns the subcommand's name and Run; cmd is "" when kong
// must parse them, and g is then to be discarded.
func fastParse(g *grammar, args []string) (cmd string, run func(*env) error) {
	shortcut.Ran(shortcut.FastParse)
	var pos string
	var nPos int
	var seen [8]string
	nSeen := 0
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "" || !utf8.ValidString(a) {
			return "", nil
		}
		if a[0] != '-' {
			switch {
			case cmd == "":
				if _, known := fastFlagOf(a, ""); !known {
					return "", nil
				}
				cmd = a
			default:
				pos = a
				nPos++
			}
			continue
		}
		if !strings.HasPrefix(a, "--") || len(a) == 2 {
			return "", nil
		}
		name, value, hasValue := strings.Cut(a[2:], "=")
		for _, s := range seen[:nSeen] {
			if s == name {
				return "", nil
			}
		}
		if nSeen == len(seen) {
			return "", nil
		}
		seen[nSeen] = name
		nSeen++
		kind := noFlag
		switch name {
		case "ledger", "lock-timeout":
			kind = valueFlag
		case "json":
			kind = switchFlag
		default:
			if cmd != "" {
				kind, _ = fastFlagOf(cmd, name)
			}
		}
		switch kind {
		case noFlag:
			return "", nil
		case switchFlag:
			if hasValue {
				return "", nil
			}
		case valueFlag:
			if !hasValue {
				if i+1 == len(args) {
					return "", nil
				}
				i++
				value = args[i]
			}
			if value == "" || value[0] == '-' || !utf8.ValidString(value) {
				return "", nil
			}
		}
		if !g.setFast(cmd, name, value) {
			return "", nil
		}
	}
	if cmd == "" || nPos != 1 || cmd == "finish" && g.Finish.Status == "" {
		return "", nil
	}
	var arg *string
	switch cmd {
	case "claim":
		arg, run = &g.Claim.Job, g.Claim.Run
	case "fence":
		arg, run = &g.Fence.ID, g.Fence.Run
	case "adopt":
		arg, run = &g.Adopt.ID, g.Adopt.Run
	case "start":
		arg, run = &g.Start.ID, g.Start.Run
	case "finish":
		arg, run = &g.Finish.ID, g.Finish.Run
	case "show":
		arg, run = &g.Show.ID, g.Show.Run
	case "latest":
		arg, run = &g.Latest.Job, g.Latest.Run
	default:
		return "", nil
	}
	*arg = pos
	return cmd, run
}

// setFast stores one flag of subcommand cmd as kong would, or reports
// false where kong's reading could differ or it would report an error.
func (g *grammar) setFast(cmd, name, value string) bool {
	switch name {
	case "ledger":
		g.Ledger = cli.Dir(value)
		return true
	case "json":
		g.JSON = true
		return true
	case "lock-timeout":
		return g.LockTimeout.UnmarshalText([]byte(value)) == nil
	}
	switch cmd + " " + name {
	case "claim source":
		g.Claim.Source = value
	case "claim instant":
		return g.Claim.Instant.UnmarshalText([]byte(value)) == nil
	case "claim exclusive":
		g.Claim.Exclusive = true
	case "claim owner":
		return g.Claim.Owner.UnmarshalText([]byte(value)) == nil
	case "adopt owner":
		return g.Adopt.Owner.UnmarshalText([]byte(value)) == nil
	case "start owner":
		return g.Start.Owner.UnmarshalText([]byte(value)) == nil
	case "finish status":
		if value != "completed" && value != "failed" {
			return false
		}
		g.Finish.Status = value
	case "finish exit-code":
		// kong reads ints with base prefixes and underscores; plain
		// decimals read the same either way.
		if value != "0" && (value[0] == '0' || strings.Trim(value, "0123456789") != "") {
			return false
		}
		n, err := strconv.Atoi(value)
		if err != nil {
			return false
		}
		g.Finish.ExitCode = &n
	case "finish error":
		g.Finish.Error = value
	case "show field":
		g.Show.Field = value
	case "latest field":
		g.Latest.Field = value
	default:
		return false
	}
	return true
}
