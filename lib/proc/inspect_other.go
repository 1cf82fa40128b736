//go:build !linux

package proc

func FlockHolder(fd int) (holder ID, comm string, ok bool) { return ID{}, "", false }
func SelfStat() (Stat, error)                              { return Stat{}, errUnsupported }
func NamespaceOf(pid int) (string, error)                  { return "", errUnsupported }
func HoldsPidfd(pid int) bool                              { return false }
