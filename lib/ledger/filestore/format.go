package filestore

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/ledger"
)

// The store's format is the one this version writes, and the only one it
// opens: job logs (format 2, the first release's, laid out as doc.go
// says), marked by the empty root file "logs" that creating a store makes
// before its lock file. Format 1 (a file per record in exec/, written by
// development builds before job logs) was never released: such a store,
// and one without the mark, is refused, never migrated.
const (
	logsMark    = "logs"
	storeFormat = 2
)

// checkFormat refuses a store that is not of this version's format.
func (s *Store) checkFormat() error {
	var st unix.Stat_t
	err := unix.Fstatat(s.root.FD, logsMark, &st, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case err == unix.ENOENT:
		return fmt.Errorf("%w: %s: format 1 is not this version's (%d, job logs; format 1 was never released, and is not migrated)", ledger.ErrUnsafeStore, s.dir, storeFormat)
	case err != nil:
		return &os.PathError{Op: "stat", Path: s.root.Show(logsMark), Err: err}
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return fmt.Errorf("%w: %s is not a regular file", ledger.ErrUnsafeStore, s.root.Show(logsMark))
	}
	return nil
}
