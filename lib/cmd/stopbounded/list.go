package stopbounded

import (
	"encoding/json"
	"fmt"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/exit"
	"github.com/tether-sh/tether/lib/proc"
	"github.com/tether-sh/tether/lib/stop"
)

// member is the --json form of one process --tree --list prints.
type member struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
	Comm  string `json:"comm"`
	PPID  int    `json:"ppid"`
	PGID  int    `json:"pgid"`
}

// list prints the members of each ROOT's tree as --tree would find them
// now, and signals nothing. Every ROOT is checked before anything is
// printed, as for a stop.
func list(t *cli.Tool, g *grammar, args []string) int {
	var trees []*stop.Tree
	defer func() {
		for _, tr := range trees {
			tr.Close()
		}
	}()
	for _, a := range args {
		id, err := proc.ParseID(a)
		if err != nil {
			return t.Fail(err, exit.Usage)
		}
		tr, err := stop.NewTree(id, g.Name)
		if err != nil {
			return t.Fail(err, exit.Usage)
		}
		trees = append(trees, tr)
	}
	enc := json.NewEncoder(t.Stdout)
	for _, tr := range trees {
		stats, err := tr.List()
		if err != nil {
			return t.Fail(fmt.Errorf("cannot walk %s: %w", tr.Label(), err), exit.System)
		}
		for _, st := range stats {
			if g.JSON {
				enc.Encode(member{PID: st.PID, Start: st.Start, Comm: st.Comm, PPID: st.PPID, PGID: st.PGID})
				continue
			}
			id := proc.ID{PID: st.PID, Start: st.Start}
			fmt.Fprintln(t.Stdout, id.String()+" "+cli.EscapeControl(st.Comm))
		}
	}
	return exit.OK
}
