package stopbounded

import (
	"github.com/tether-sh/tether/lib/proc"
	"github.com/tether-sh/tether/lib/stop"
)

// newTree builds a --tree target: id and every descendant, frozen before
// each signal so that no fork escapes. It refuses (proc.ErrUnsafe) a tree
// that contains stopbounded itself.
func newTree(id proc.ID, name string) (stop.Target, error) {
	return stop.NewTree(id, name)
}
