//go:build !linux

package stop

// ThawRole is the reexec role of the thaw guardian.
const ThawRole = "thaw"

// ThawGuard needs pidfds; off Linux StartThawGuard reports errNoTree.
type ThawGuard struct{}

// StartThawGuard reports errNoTree off Linux.
func StartThawGuard() (*ThawGuard, error) { return nil, errNoTree }

func (g *ThawGuard) PID() int             { return 0 }
func (g *ThawGuard) Hold(pidfd int) error { return errNoTree }
func (g *ThawGuard) Done()                {}
