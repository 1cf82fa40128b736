//go:build !linux

package ledgercmd

import "os"

// isTerminal reports false off Linux: status prints its plain form.
func isTerminal(*os.File) bool { return false }
