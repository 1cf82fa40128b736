//go:build linux

package runner

// Holds are the ways Run holds a recorded command, for tests that must
// prove each: traced, and the gate where ptrace is refused.
var Holds = []struct {
	Name string
	Set  func() (restore func())
}{
	{"traced", func() func() { return func() {} }},
	{"gate", func() func() {
		traceRefused = true
		return func() { traceRefused = false }
	}},
}

// Traceable is traceable, for its table test.
var Traceable = traceable
