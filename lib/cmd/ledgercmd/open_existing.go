package ledgercmd

import (
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/location"
)

// openExisting opens the store for a command that only reads (show,
// latest, list, output): where there is none it says so (exit 3) and
// creates nothing. A member of a group the owner lets read the store reads
// it read-only (filestore.OpenExisting). Run by root on a file store another
// user owns, it reads with that user's rights (filestore.ReadAsOwner), as
// status does, until the store is closed: these commands only print, to a
// stdout already open.
func (inv *invocation) openExisting() (ledger.Ledger, error) {
	return inv.openWith(location.Options{Existing: true, AsOwner: true})
}

// jsonEacher is st's ledger.JSONEacher, if the store it opens has one.
func jsonEacher(st ledger.Ledger) (ledger.JSONEacher, bool) {
	if o, ok := st.(interface{ Unwrap() ledger.Ledger }); ok {
		st = o.Unwrap()
	}
	je, ok := st.(ledger.JSONEacher)
	return je, ok
}
