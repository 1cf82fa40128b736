//go:build !linux

package stop

import (
	"context"
	"errors"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/proc"
)

// errNoTree: walking a process tree needs Linux's /proc and pidfd.
var errNoTree = errors.New("process trees are only supported on Linux")

// Tree is a process and its descendants; off Linux it cannot be walked,
// and every operation reports errNoTree.
type Tree struct {
	// Name labels the target in messages.
	Name string
	// Guard is unused off Linux.
	Guard *ThawGuard
}

// ErrInterrupted is returned by Signal once Interrupt was called.
var ErrInterrupted = errors.New("interrupted")

// NewTree reports errNoTree off Linux.
func NewTree(id proc.ID, name string) (*Tree, error) { return nil, errNoTree }

// NewDescendants returns a Tree whose Signal reports errNoTree.
func NewDescendants(name string, hold sync.Locker) *Tree { return &Tree{Name: name} }

func (t *Tree) Label() string                  { return t.Name }
func (t *Tree) Signal(sig unix.Signal) error   { return errNoTree }
func (t *Tree) Sweep() ([]proc.ID, error)      { return nil, errNoTree }
func (t *Tree) List() ([]proc.Stat, error)     { return nil, errNoTree }
func (t *Tree) Gone() bool                     { return true }
func (t *Tree) Wait(ctx context.Context) error { return nil }
func (t *Tree) Found() []proc.ID               { return nil }
func (t *Tree) Unjudged() ([]proc.ID, error)   { return nil, nil }
func (t *Tree) Killed() []proc.ID              { return nil }
func (t *Tree) Close() error                   { return nil }
func (t *Tree) Interrupt()                     {}
func (t *Tree) Skip(ids []proc.ID)             {}
func (t *Tree) Thaw()                          {}
