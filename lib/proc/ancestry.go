package proc

import (
	"errors"
	"fmt"
)

// ErrOutside is wrapped by the refusal of a process that is neither a
// given root nor one of its descendants.
var ErrOutside = errors.New("outside the tree")

// ancestryRetries bounds how often descends starts over after a process on
// the path exited mid-walk (its children were re-parented meanwhile).
const ancestryRetries = 3

// maxDepth bounds a walk up the PPID links: no real chain is this long, so
// a longer one can only be a loop made of recycled PIDs.
const maxDepth = 1 << 16

// descends reports whether process id is root or descends from it, reading
// each process's stat through read. It follows the PPID links upwards from
// id. A link is believed only if the parent started no later than the
// child and has not exited: a parent that exited mid-walk re-parented its
// children (to init or a subreaper) and its PID may have been recycled by
// a younger process, so the walk starts over and answers for the tree as
// it is now. id itself must still have its START; otherwise it is gone
// (ErrGone). A root with START 0 matches whichever process holds its PID.
func descends(read func(pid int) (Stat, error), id, root ID) (bool, error) {
	for attempt := 0; attempt < ancestryRetries; attempt++ {
		cur, err := read(id.PID)
		if err != nil {
			return false, err
		}
		if (id.Start != 0 && cur.Start != id.Start) || cur.Exited() {
			return false, fmt.Errorf("pid %d: %w", id.PID, ErrGone)
		}
		ok, broken := climb(read, cur, root)
		if !broken {
			return ok, nil
		}
	}
	// The path kept changing under the walk: nothing was proved.
	return false, nil
}

// climb is one walk of descends from cur. broken reports a link that could
// not be believed.
func climb(read func(pid int) (Stat, error), cur Stat, root ID) (ok, broken bool) {
	for depth := 0; depth < maxDepth; depth++ {
		if cur.PID == root.PID {
			return root.Start == 0 || cur.Start == root.Start, false
		}
		if cur.PPID <= 0 {
			return false, false // above init (PID 1) or kthreadd (PID 2)
		}
		parent, err := read(cur.PPID)
		if err != nil || parent.Start > cur.Start || parent.Exited() {
			return false, true
		}
		cur = parent
	}
	return false, false
}
