// Package shortcut is the one switch over tether's accelerators: code
// paths that exist only to be faster than the general path beside them and
// must change nothing anyone can see. They are:
//
//   - FastParse: the tools' kong-free parse of every command line that
//     parses (lib/internal/argv, with tables generated from kong's model:
//     lib/cmd/TOOL/argv_gen.go);
//   - LoneVersion: a lone --version answered before kong's model is built
//     (lib/cli);
//   - CanonicalCodec: records encoded and read back without encoding/json's
//     reflection when they are in canonical form (lib/ledger/codec.go).
//
// TETHER_NO_SHORTCUTS=1 in the environment turns every one of them off:
// each call then takes the general path (kong's full grammar,
// encoding/json). It is a debugging and verification switch, not a user
// feature: CI runs the whole scenario suite a second time with it
// (TestScriptsNoShortcuts), so that every scenario proves the shortcuts
// change nothing, and a suspected shortcut bug can be ruled in or out
// by setting it.
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
// A new accelerator adds its name here and its path to the list above.
package shortcut

import (
	"os"
	"sync/atomic"
)

// Env is the environment variable that turns every shortcut off when set
// to anything but "" or "0".
const Env = "TETHER_NO_SHORTCUTS"

// Name names one accelerator.
type Name int

// The accelerators.
const (
	FastParse Name = iota
	LoneVersion
	CanonicalCodec
	numNames
)

var names = [numNames]string{"fast parse", "lone --version", "canonical codec"}

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

// Off reports whether Env turns the shortcuts off. The environment is read
// on every call (a map lookup), so that a test can set it.
func Off() bool {
	v := os.Getenv(Env)
	return v != "" && v != "0"
}

// Take reports whether accelerator n may be tried.
func Take(n Name) bool { return !Off() }

// Ran records that accelerator n's code ran. Each accelerator says so
// first thing, whoever called it.
func Ran(n Name) { ran[n].Add(1) }

// Runs returns how many times accelerator n's code ran in this process.
func Runs(n Name) int64 { return ran[n].Load() }
