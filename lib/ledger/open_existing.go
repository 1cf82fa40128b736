package ledger

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrNoStore is returned by OpenExisting where there is no store.
var ErrNoStore = errors.New("no store")

// OpenExisting is Open for a command that only reads: where dir holds no
// store it returns ErrNoStore instead of creating an empty one, so that a
// mistyped --ledger says so rather than answering "nothing" (SPEC:
// read-only subcommands never create a store).
//
// The check comes before Open: a store removed between the two is created
// empty by Open, as it would have been before; nothing is lost.
func OpenExisting(dir string, opts ...Option) (*Store, error) {
	if dir == "" {
		return nil, badInputf("empty store directory")
	}
	if _, err := os.Stat(filepath.Join(dir, lockName)); err != nil {
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			// Not ours to judge here: Open says what is wrong.
			return Open(dir, opts...)
		}
		why := "it does not exist"
		if fi, serr := os.Stat(dir); serr == nil && fi.IsDir() {
			why = "the directory holds no ledger"
		} else if serr == nil {
			why = "it is not a directory"
		}
		return nil, fmt.Errorf("%w at %s: %s (only commands that write create one)", ErrNoStore, dir, why)
	}
	return Open(dir, opts...)
}
