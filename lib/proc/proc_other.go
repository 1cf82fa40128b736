//go:build !linux

package proc

import (
	"context"
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// errUnsupported is returned by every process operation off Linux: tether
// relies on /proc and pidfd and would rather refuse than guess.
var errUnsupported = errors.New("process tracking is only supported on Linux")

func ReadStat(pid int) (Stat, error)                               { return Stat{}, errUnsupported }
func Lookup(pid int) (ID, error)                                   { return ID{}, errUnsupported }
func Self() ID                                                     { return ID{PID: os.Getpid()} }
func IsThread(pid int) bool                                        { return false }
func Alive(id ID) (bool, error)                                    { return false, errUnsupported }
func BootID() (string, error)                                      { return "", errUnsupported }
func havePidfd() bool                                              { return false }
func Open(id ID) (*Handle, error)                                  { return nil, errUnsupported }
func WaitAll(ctx context.Context, hs []*Handle, anyOne bool) error { return errUnsupported }
func CheckTarget(pid int) error                                    { return errUnsupported }
func CheckGroup(pgid int) error                                    { return errUnsupported }
func SignalGroup(pgid int, sig unix.Signal) error                  { return errUnsupported }
func Scan(fn func(Stat)) error                                     { return errUnsupported }
func GroupMembers(pgid int) ([]ID, error)                          { return nil, errUnsupported }

// Handle is unusable off Linux; Open never returns one.
type Handle struct{ id ID }

func (h *Handle) ID() ID                         { return h.id }
func (h *Handle) Close() error                   { return nil }
func (h *Handle) Gone() bool                     { return true }
func (h *Handle) Signal(sig unix.Signal) error   { return errUnsupported }
func (h *Handle) Wait(ctx context.Context) error { return errUnsupported }

func GroupOutlives(leader ID) (bool, error)              { return false, errUnsupported }
func WaitGroupGone(ctx context.Context, leader ID) error { return errUnsupported }

func PollEach(hs []*Handle, timeout time.Duration, gone func(i int) bool) (bool, error) {
	return false, errUnsupported
}

// CheckProcNS has no /proc to doubt off Linux; every process operation
// there fails with its own error.
func CheckProcNS() error { return nil }

func PIDNamespace() (uint64, error) { return 0, errUnsupported }

func PIDNamespaceGone(ns uint64) (bool, error) { return false, errUnsupported }

func (h *Handle) DescendsFrom(root ID) (bool, error) { return false, errUnsupported }

// Scanner is unusable off Linux; NewScanner never returns one.
type Scanner struct{}

func NewScanner() (*Scanner, error)             { return nil, errUnsupported }
func (r *Scanner) Close() error                 { return nil }
func (r *Scanner) Stat(pid int) (Stat, error)   { return Stat{}, errUnsupported }
func (r *Scanner) Snapshot() (*Snapshot, error) { return nil, errUnsupported }

// Snapshot is empty off Linux.
type Snapshot struct{}

func (s *Snapshot) Stat(pid int) (Stat, bool) { return Stat{}, false }
func (s *Snapshot) Children(pid int) []int    { return nil }
func (s *Snapshot) Unreadable() map[int]error { return nil }

func Children(pid int) ([]ID, error) { return nil, errUnsupported }

// Member is unusable off Linux; its Signal always fails.
type Member struct{ id ID }

func OpenMember(r *Scanner, st Stat) (*Member, bool) {
	return &Member{id: ID{PID: st.PID, Start: st.Start}}, true
}
func ChildMember(id ID) *Member                { return &Member{id: id} }
func (m *Member) ID() ID                       { return m.id }
func (m *Member) Pidfd() int                   { return -1 }
func (m *Member) Signal(sig unix.Signal) error { return errUnsupported }
func (m *Member) Close()                       {}

func (r *Scanner) GroupStopped(st Stat) (bool, error) { return false, errUnsupported }
