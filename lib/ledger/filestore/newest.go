package filestore

import (
	"slices"

	"github.com/tether-sh/tether/lib/ledger/filestore/joblog"
)

// newestRefs is where the newest n executions of l are, in claim order.
// It reads the log backwards from its end (joblog.Log.Backward) until it
// has passed the nth claim from the end: the frames of the newest n and
// of what else ran meanwhile, however many the job holds. A frame that
// does not read backwards (an append under way, a torn tail, damage)
// sends it to the forward scan, which reports what it must.
func (l *jobLog) newestRefs(n int) ([]execRef, error) {
	var refs []execRef        // newest first
	last := map[int64]int64{} // claim offset → its newest frame's, of the frames passed
	err := l.Backward(l.End, func(e joblog.Entry) bool {
		switch e.Kind {
		case joblog.KindClaim:
			ref := execRef{claimOff: e.Off, lastOff: e.Off}
			if off, ok := last[e.Off]; ok {
				ref.lastOff = off
				delete(last, e.Off)
			}
			refs = append(refs, ref)
		case joblog.KindUpdate:
			if _, ok := last[e.Ref]; !ok {
				last[e.Ref] = e.Off
			}
		}
		return len(refs) < n
	})
	if err != nil {
		all, err := l.refs(nil)
		return all[max(len(all)-n, 0):], err
	}
	slices.Reverse(refs)
	return refs, nil
}
