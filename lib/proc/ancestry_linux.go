package proc

import "fmt"

// DescendsFrom reports whether the process h holds is root or one of its
// descendants now, by its PPID links in /proc. The pidfd pins the process
// while the links are read: its START is checked against the handle's, and
// a process that exits during the walk is ErrGone, never an answer about
// whoever took its PID. A signal sent through h right after a true answer
// reaches a process that was inside root's tree at the check.
//
// A descendant whose parent exited was re-parented (to init, or to the
// nearest child subreaper) and descends from root only if that new parent
// does: ancestry is the kernel's, not a record of who forked whom.
func (h *Handle) DescendsFrom(root ID) (bool, error) {
	r, err := NewScanner()
	if err != nil {
		return false, err
	}
	defer r.Close()
	ok, err := descends(r.Stat, h.id, root)
	if err != nil {
		return false, err
	}
	if h.Gone() {
		return false, fmt.Errorf("pid %d: %w", h.id.PID, ErrGone)
	}
	return ok, nil
}
