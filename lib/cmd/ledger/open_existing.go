package ledger

import "github.com/tether-sh/tether/lib/ledger"

// openExisting opens the store for a command that only reads (show,
// latest, list, prune --dry-run): where there is none it says so (exit 3)
// and creates nothing.
func (e *env) openExisting() (*ledger.Store, error) {
	dir, err := ledger.ResolveDir(string(e.g.Ledger))
	if err != nil {
		return nil, err
	}
	return ledger.OpenExisting(dir, ledger.LockTimeoutFlag(e.g.LockTimeout.Given, e.g.LockTimeout.D()), ledger.LockWarn(func(msg string) { e.tool.Warnf("%s", msg) }))
}
