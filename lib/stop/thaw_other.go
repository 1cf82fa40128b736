//go:build !linux

package stop

import "github.com/tether-sh/tether/lib/proc"

// ThawRole is the reexec role of the thaw guardian.
const ThawRole = "thaw"

// ThawGuard needs pidfds; off Linux StartThawGuard reports errNoTree.
type ThawGuard struct{}

// StartThawGuard reports errNoTree off Linux.
func StartThawGuard() (*ThawGuard, error) { return nil, errNoTree }

func (g *ThawGuard) PID() int                         { return 0 }
func (g *ThawGuard) Gen() int                         { return 0 }
func (g *ThawGuard) Ensure() error                    { return errNoTree }
func (g *ThawGuard) Hold(pidfd int, id proc.ID) error { return errNoTree }
func (g *ThawGuard) Done()                            {}
