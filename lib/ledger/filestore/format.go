package filestore

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/ledger"
)

// The store's format is the one this version writes, and the only one it
// opens: job logs whose frames know their log and place (format 3, the
// first release's, laid out as doc.go says), marked by the root file
// "logs" holding "3\n" that creating a store makes before its lock file.
// Formats 1 (a file per record in exec/) and 2 (job logs whose header
// named no job and whose frames' CRCs covered their bytes only: a log
// copied from another job, or doubled, read as valid), written by
// development builds, were never released: such a store (format 2's mark
// is empty; format 1 has none) is refused, never migrated. The format is
// told by the mark's size, which the stat that finds it gives: no read.
const (
	logsMark    = "logs"
	storeFormat = 3
	markContent = "3\n"
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
	case st.Size == 0:
		return fmt.Errorf("%w: %s: format 2 is not this version's (%d, frames that know their log; format 2 was never released, and is not migrated)", ledger.ErrUnsafeStore, s.dir, storeFormat)
	case st.Size != int64(len(markContent)):
		return fmt.Errorf("%w: %s: %s is not of a format this version knows (%d)", ledger.ErrUnsafeStore, s.dir, s.root.Show(logsMark), storeFormat)
	}
	return nil
}
