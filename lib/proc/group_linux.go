package proc

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// CheckGroup refuses a process group that must never be signalled: ≤ 1, or
// the caller's own group.
func CheckGroup(pgid int) error {
	if pgid <= 1 {
		return fmt.Errorf("%w process group %d", ErrUnsafe, pgid)
	}
	if pgid > MaxPID {
		return fmt.Errorf("%w: process group %d", ErrBadID, pgid)
	}
	if pgid == unix.Getpgrp() {
		return fmt.Errorf("%w process group %d: it is this process's own group", ErrUnsafe, pgid)
	}
	return nil
}

// SignalGroup sends sig to every process in group pgid. ESRCH (no member
// left) is ErrGone.
func SignalGroup(pgid int, sig unix.Signal) error {
	if err := CheckGroup(pgid); err != nil {
		return err
	}
	err := unix.Kill(-pgid, sig)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ESRCH):
		return fmt.Errorf("process group %d: %w", pgid, ErrGone)
	case errors.Is(err, unix.EPERM):
		return fmt.Errorf("process group %d: %w", pgid, ErrPermission)
	}
	return fmt.Errorf("signal process group %d: %w", pgid, err)
}

// GroupMembers returns the live (not yet exited) members of process group
// pgid.
//
// A scan of /proc is no snapshot: it lists PIDs a few hundred at a time
// and reads each one's stat afterwards, so a member that joins after its
// PID's batch was listed, while the only other member exits before its
// stat is read, is missed by the same scan — the group looks empty while
// it is not (seen under load, a setpgid'd member next to a dying one). An
// empty answer is therefore confirmed: kill(-pgid, 0) failing with ESRCH
// proves that no process at all is in the group; otherwise (zombies count
// for kill, not for us) a second, later scan must find no live member
// either.
func GroupMembers(pgid int) ([]ID, error) {
	ids, err := scanGroup(pgid)
	if err != nil || len(ids) > 0 || pgid <= 1 {
		return ids, err
	}
	if errors.Is(unix.Kill(-pgid, 0), unix.ESRCH) {
		return nil, nil
	}
	return scanGroup(pgid)
}

// scanGroup is one scan for the live members of group pgid.
func scanGroup(pgid int) ([]ID, error) {
	var ids []ID
	err := Scan(func(st Stat) {
		if st.PGID == pgid && !st.Exited() {
			ids = append(ids, ID{PID: st.PID, Start: st.Start})
		}
	})
	return ids, err
}

// GroupOutlives reports whether process group leader.PID still has a live
// member although its leader — the process leader names — is gone: the
// leader's children and helpers in its group running on. A group id cannot
// be reused while any member of the group exists, so members found while
// no other process holds the leader's PID are the leader's own; if another
// process holds that PID now, the number was recycled after the old group
// emptied, and the old group is gone.
func GroupOutlives(leader ID) (bool, error) {
	if leader.PID <= 1 {
		return false, nil
	}
	if st, err := ReadStat(leader.PID); err == nil && leader.Start != 0 && st.Start != leader.Start {
		return false, nil
	}
	members, err := GroupMembers(leader.PID)
	if err != nil {
		return false, err
	}
	for _, m := range members {
		if m.PID != leader.PID {
			return true, nil
		}
	}
	return false, nil
}

// WaitGroupGone blocks until nothing is left of the process group that
// leader led — the leader is gone and GroupOutlives finds no member — or
// ctx is done. Members started meanwhile are waited for too. It waits on
// pidfds, rescanning /proc only when a round of members has exited.
func WaitGroupGone(ctx context.Context, leader ID) error {
	if h, err := Open(leader); err == nil {
		err = h.Wait(ctx)
		h.Close()
		if err != nil {
			return err
		}
	}
	for {
		outlives, err := GroupOutlives(leader)
		if err != nil || !outlives {
			return err
		}
		members, err := GroupMembers(leader.PID)
		if err != nil {
			return err
		}
		var hs []*Handle
		for _, m := range members {
			if h, err := Open(m); err == nil {
				hs = append(hs, h)
			}
		}
		err = WaitAll(ctx, hs, false)
		for _, h := range hs {
			h.Close()
		}
		if err != nil {
			return err
		}
	}
}
