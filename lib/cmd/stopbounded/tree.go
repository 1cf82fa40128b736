package stopbounded

import (
	"errors"

	"github.com/tether-sh/tether/lib/proc"
	"github.com/tether-sh/tether/lib/stop"
)

// newTree builds a --tree target; wired to lib/stop's tree walker once it lands.
func newTree(id proc.ID, name string) (stop.Target, error) {
	return nil, errors.New("--tree is not available yet")
}
