// Package shortcut is the one switch over tether's accelerators: code
// paths that exist only to be faster than the general path beside them and
// must change nothing anyone can see. They are, each by its name:
//
//   - fast-parse (FastParse): the tools' kong-free parse of every command
//     line that parses (lib/internal/argv, with tables generated from
//     kong's model: lib/cmd/TOOL/argv_gen.go). In adopt, watchpid,
//     stopbounded and reap (and ledger where kong is linked in:
//     ledgerkong.Main, in tether-pg and lib.Tools) it stands for kong's
//     parse in process, and this switch turns it off. In the ledger
//     binary it is no shortcut but the parser: kong is not linked there
//     (kong's model is the grammar's source at build time, and the
//     differential tests below its proof), so the switch does not apply
//     to ledger's parse: ledger words its help and usage errors itself
//     either way (TestLedgerExplainsItself), and hands tether-pg no line
//     to parse, with the switch on or off. Proof:
//     TestArgvMatchesKong and FuzzArgv (per tool and on argvtest/toy),
//     ledger's TestExplainMatchesKong and FuzzExplain (the parse, or the
//     words and exit code, of every line), TestScriptsNoShortcuts. Saving: `ledger run`'s start 2.0-2.2 ms
//     against 9.7-10.0 ms through tether-pg's kong (bench/startup, medians
//     of 300, a loaded 2-core machine, December 2026), on every ledger
//     command; `reap true` 14.0 ms against 15.3 ms (kong's model built),
//     medians of 300 interleaved runs;
//   - lone-version (LoneVersion): a lone --version answered before kong's
//     model is built, or, in the ledger binary, before anything is parsed
//     (lib/cli). The slow path is kong's --version hook (in the ledger
//     binary, the walk that answers --version anywhere on a line as the
//     hook does: lib/cmd/ledgercmd's usage.go). Proof: the
//     tether_version_help scenario, run with and without shortcuts.
//     Saving: `ledger --version` 2.4 ms against 10.5 ms through
//     tether-pg, medians of 300 interleaved runs; in the tools that link
//     kong it saves less than a user notices (`adopt --version` 4.2 ms
//     against 4.5 ms) and is kept only because it is ledger's code too.
//
// ledger's --help, completion and the usage errors it words itself are
// not shortcuts: they have no slow path in the ledger binary (tables
// generated from the kong model, lib/cmd/ledgercmd/explain_gen.go, which
// TestHelpMatchesKong, TestCompleteMatchesKong and
// TestUsageErrorsMatchKong compare with kong's own answers).
//   - canonical-codec (CanonicalCodec): records encoded and read back
//     without encoding/json's reflection when they are in canonical form
//     (the writer: lib/ledger/internal/form's AppendCanonical, for
//     lib/ledger's MarshalJSON and lib/ledger/filestore/wire's Encode and
//     EncodeDelta; the reader: wire's Decode and ApplyDelta). Slow path:
//     encoding/json on form.Record. Proof: FuzzCanonicalDecode,
//     FuzzCanonicalEncode (both ways agree with encoding/json on what the
//     fast path accepts), TestCanonicalCodec. Saving, on `ledger show ID
//     --json` (a live execution): about a quarter of its CPU, half a
//     millisecond, on every command that reads or writes a record (about
//     an eighth of a claim, start, finish and show); none on list --json
//     or prune while stored-bytes is on (bench/README.md, "Accelerators").
//   - stored-bytes (StoredBytes): a stored claim and delta read from
//     their bytes without decoding them, when they are in the canonical
//     codec's form: printed as MarshalJSON's object (list --json) or read
//     for what a prune decides by (lib/ledger/filestore/wire's
//     AppendStoredJSON and StoredFate, used by the file store). Slow path:
//     Decode and ApplyDelta, then MarshalJSON. Proof: FuzzStoredJSON (the object and
//     the fate agree with the slow path's, or it declines),
//     TestAppendStoredJSON, TestAppendStoredJSONDeclines,
//     FuzzCanonicalTime. Saving, on `ledger list --json` of 100,000
//     executions: about two thirds of its CPU, over half a second; on
//     `ledger prune --keep 10` of them, about a third (bench/README.md,
//     "Accelerators").
//
// TETHER_NO_SHORTCUTS in the environment turns them off: a comma-separated
// list of names (TETHER_NO_SHORTCUTS=fast-parse,lone-version) turns off
// those alone; any other value but "" or "0" (TETHER_NO_SHORTCUTS=1, or a
// list with a name that is not one of them) turns off every one. A call
// of a shortcut that is off takes the general path (kong's full grammar,
// encoding/json). It is a debugging and verification switch, not a user
// feature: CI runs the whole scenario suite a second time with every
// shortcut off (TestScriptsNoShortcuts), so that every scenario proves the
// shortcuts change nothing, and a suspected shortcut bug can be ruled in
// or out, and narrowed to one, by setting it.
//
// Every accelerator is entered through Take, and only through it, and its
// code says Ran when it runs, so that a test can prove the switch covers
// it (a path that bypassed Take would still count):
//
//	if shortcut.Take(shortcut.FastParse) {
//		... fastParse: shortcut.Ran(shortcut.FastParse), then the fast
//		path, which may still decline ...
//	}
//
// A new accelerator adds its Name and its name here, and its entry to the
// register above: the slow path it stands for, its proof (a differential
// test or fuzzer against that path) and its measured saving on a named
// command. One whose saving no user could notice goes, and its slow path
// becomes the only one.
package shortcut

import (
	"os"
	"strings"
	"sync/atomic"
)

// Env is the environment variable that turns shortcuts off: a
// comma-separated list of names turns off those, any other value but ""
// or "0" every one.
const Env = "TETHER_NO_SHORTCUTS"

// Name names one accelerator.
type Name int

// The accelerators.
const (
	FastParse Name = iota
	LoneVersion
	CanonicalCodec
	StoredBytes
	numNames
)

// names are the accelerators' names, as Env lists them.
var names = [numNames]string{"fast-parse", "lone-version", "canonical-codec", "stored-bytes"}

// String returns n's name, as Env lists it.
func (n Name) String() string { return names[n] }

// All lists every accelerator.
func All() []Name {
	all := make([]Name, numNames)
	for i := range all {
		all[i] = Name(i)
	}
	return all
}

// ran counts, per accelerator, the times its code ran: what tells a test
// (or a debugger) which shortcuts a process took.
var ran [numNames]atomic.Int64

// Take reports whether accelerator n may be tried: whether Env leaves it
// on. The environment is read on every call (a map lookup, and for a list
// a scan of it), so that a test can set it.
func Take(n Name) bool {
	v := os.Getenv(Env)
	if v == "" || v == "0" {
		return true
	}
	return !off(v, n)
}

// off reports whether Env's value v, neither "" nor "0", turns n off:
// when v is a list of names, whether it names n; otherwise, always.
func off(v string, n Name) bool {
	named, listed := false, false
	for part := range strings.SplitSeq(v, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		i := indexOf(part)
		if i < 0 {
			return true // not a list of names: every one is off
		}
		listed = true
		named = named || Name(i) == n
	}
	return named || !listed
}

// indexOf returns the index of the accelerator named name, or -1.
func indexOf(name string) int {
	for i, s := range names {
		if s == name {
			return i
		}
	}
	return -1
}

// Ran records that accelerator n's code ran. Each accelerator says so
// first thing, whoever called it.
func Ran(n Name) { ran[n].Add(1) }

// Runs returns how many times accelerator n's code ran in this process.
func Runs(n Name) int64 { return ran[n].Load() }
