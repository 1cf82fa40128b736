package cli

import "github.com/tether-sh/tether/lib/spec"

// EscapeControl is spec.EscapeControl. The escaper lives in spec so that
// the process engines, which must not depend on lib/cli, write the words
// they quote (a command's name) in the same escapes as the diagnostics.
func EscapeControl(s string) string { return spec.EscapeControl(s) }
