package ledgercmd

import (
	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/filestore"
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
	loc, err := inv.location()
	if err != nil {
		return nil, err
	}
	restore := func() error { return nil }
	if !location.IsPostgres(loc) {
		if restore, err = filestore.ReadAsOwner(loc); err != nil {
			return nil, err
		}
	}
	st, err := inv.openWith(location.Options{Existing: true})
	if err != nil {
		if rerr := restore(); rerr != nil {
			return nil, rerr
		}
		return nil, err
	}
	return asOwner{st, restore}, nil
}

// asOwner is a store read as its owner: closing it makes the process root
// again.
type asOwner struct {
	ledger.Ledger
	restore func() error
}

func (s asOwner) Close() error {
	err := s.Ledger.Close()
	if rerr := s.restore(); rerr != nil {
		return rerr
	}
	return err
}

// jsonEacher is st's ledger.JSONEacher, if the store it opens has one.
func jsonEacher(st ledger.Ledger) (ledger.JSONEacher, bool) {
	if o, ok := st.(asOwner); ok {
		st = o.Ledger
	}
	je, ok := st.(ledger.JSONEacher)
	return je, ok
}
