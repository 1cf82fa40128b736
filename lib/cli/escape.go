package cli

import (
	"github.com/tether-sh/tether/lib/syntax"
)

// EscapeControl is syntax.EscapeControl. The escaper lives in syntax so that
// the process engines, which must not depend on lib/cli, write the words
// they quote (a command's name) in the same escapes as the diagnostics.
func EscapeControl(s string) string { return syntax.EscapeControl(s) }
