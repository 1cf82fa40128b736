package watchpid

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/proc"
)

// printIDs is the --id mode: each PID as PID@START, the identity that
// names that process alone.
func printIDs(t *cli.Tool, g *grammar) int {
	if len(g.Targets) == 0 {
		return t.Fail(errors.New("--id needs at least one PID"), exit.Usage)
	}
	ids := make([]proc.ID, len(g.Targets))
	for i, a := range g.Targets {
		id, err := proc.ParseID(a)
		if err != nil {
			return t.Fail(err, exit.Usage)
		}
		ids[i] = id
	}
	if err := proc.CheckProcNS(); err != nil {
		return t.Fail(err, exit.System)
	}
	code := exit.OK
	enc := json.NewEncoder(t.Stdout)
	// With --json every PID asked for gets its object, every key present:
	// start and id are null for one that does not exist.
	type idJSON struct {
		PID   int     `json:"pid"`
		Start *uint64 `json:"start"`
		ID    *string `json:"id"`
	}
	for _, want := range ids {
		// Open, not a bare /proc lookup: /proc/TID/stat exists for a
		// thread too, and a thread id is not a process any tool accepts.
		id, err := openID(want)
		if err != nil {
			thread := errors.Is(err, proc.ErrBadID)
			if thread || errors.Is(err, proc.ErrGone) {
				switch st, serr := proc.ReadStat(want.PID); {
				case thread:
					t.Warnf("pid %d is a thread, not a process", want.PID)
				case serr == nil && st.Exited() && (want.Start == 0 || want.Start == st.Start):
					// Its PID is still taken, but no process is left
					// to name: what a later tool would judge gone.
					t.Warnf("pid %d is gone: it exited, and its parent has not reaped it", want.PID)
				default:
					t.Warnf("pid %d does not exist", want.PID)
				}
				code = exit.Refused
				if g.JSON {
					enc.Encode(idJSON{PID: want.PID})
				}
				continue
			}
			return t.Fail(err, exit.System)
		}
		if g.JSON {
			token := id.String()
			enc.Encode(idJSON{id.PID, &id.Start, &token})
		} else {
			fmt.Fprintln(t.Stdout, id.String())
		}
	}
	return code
}

// openID returns the identity of the process want names: ErrGone when it
// does not exist (or its START differs), ErrBadID for a thread id.
func openID(want proc.ID) (proc.ID, error) {
	h, err := proc.Open(want)
	if err != nil {
		return proc.ID{}, err
	}
	defer h.Close()
	return h.ID(), nil
}
