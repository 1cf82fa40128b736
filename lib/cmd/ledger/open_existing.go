package ledger

import (
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/location"
)

// openExisting opens the store for a command that only reads (show,
// latest, list, prune --dry-run): where there is none it says so (exit 3)
// and creates nothing.
func (e *env) openExisting() (ledger.Ledger, error) {
	return e.openWith(location.Options{Existing: true})
}
