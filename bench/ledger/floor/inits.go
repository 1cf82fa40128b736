//go:build linux && floorinits

package main

// Built with -tags floorinits, floor also links every package ledger
// links and so runs their initialisation: the least a ledger written with
// this project's dependencies can cost.
import _ "github.com/tether-sh/tether/lib/cmd/ledgercmd"
