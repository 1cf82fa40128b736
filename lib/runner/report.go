package runner

import (
	"strconv"
	"strings"

	"github.com/tether-sh/tether/lib/syntax"

	"github.com/tether-sh/tether/lib/proc"
)

// maxListed bounds the PIDs named in one message.
const maxListed = 20

// Report says what the command left behind, one line per call of warn
// (a cli.Tool's Warnf): the leftovers stopped, those that needed KILL, and
// those that survived even KILL. It says nothing when nothing was left.
func (r Result) Report(warn func(format string, args ...any)) {
	if n := len(r.Leftovers); n > 0 {
		warn("stopped %d leftover %s (%s)", n, plural(n, "process", "processes"), ListPIDs(r.Leftovers))
	}
	if n := len(r.Killed); n > 0 && len(r.Schedule) > 0 && r.Schedule[0].Signal == 0 {
		warn("%d leftover %s did not end by %s; killed (%s)", n, plural(n, "process", "processes"),
			plural(n, "itself", "themselves"), ListPIDs(r.Killed))
	} else if n > 0 && len(r.Schedule) > 0 {
		warn("%d leftover %s ignored %s; killed (%s)", n, plural(n, "process", "processes"),
			syntax.SignalName(r.Schedule[0].Signal), ListPIDs(r.Killed))
	}
	if n := len(r.Survivors); n > 0 {
		warn("%d %s survived even KILL (%s); giving up", n, plural(n, "process", "processes"), ListPIDs(r.Survivors))
	}
	if r.Unjudged != nil {
		warn("cannot judge whether leftover processes still run: %v", r.Unjudged)
	}
}

// ListPIDs names at most 20 PIDs, then "and M more".
func ListPIDs(ids []proc.ID) string {
	var b strings.Builder
	for i, id := range ids {
		if i == maxListed {
			b.WriteString(" and " + strconv.Itoa(len(ids)-maxListed) + " more")
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(id.PID))
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
