//go:build !linux

package proc

import "fmt"

// ExitInfo cannot be known off Linux.
func (h *Handle) ExitInfo() (ExitInfo, error) {
	return ExitInfo{}, fmt.Errorf("%w: %w", errUnsupported, ErrExitUnknown)
}

func OpenUnreaped(id ID) (*Handle, error) { return nil, errUnsupported }
