package joblog

// window is what a log read ahead: b, from offset off, while owner is
// the log it holds.
type window struct {
	b     []byte
	off   int64
	owner *Log
	used  uint64 // when its owner last read it (Lender's clock)
}

// Lender lends the logs of one read of many jobs (a list) the buffers they
// read through, so that what the read holds does not grow with the jobs:
// one readAt buffer, one claim copy, one scan buffer, and at most
// MaxWindows windows (8 MiB), the one read least recently lent again.
// Only one of the logs reads at a time.
type Lender struct {
	buf, claim, scan []byte
	wins             []*window
	clock            uint64
}

// MaxWindows is how many read-ahead windows a Lender holds.
const MaxWindows = 8 << 20 / ReadSize

// window returns l's window, taking one when l has none (its own, or the
// Lender's least recently read).
func (l *Log) window() *window {
	w := l.win
	if w != nil && w.owner == l {
		if l.lend != nil {
			l.lend.clock++
			w.used = l.lend.clock
		}
		return w
	}
	switch {
	case l.lend == nil:
		w = &window{}
	case len(l.lend.wins) < MaxWindows:
		w = &window{}
		l.lend.wins = append(l.lend.wins, w)
	default:
		w = l.lend.wins[0]
		for _, o := range l.lend.wins[1:] {
			if o.used < w.used {
				w = o
			}
		}
	}
	w.owner, w.b = l, w.b[:0]
	l.win = w
	if l.lend != nil {
		l.lend.clock++
		w.used = l.lend.clock
	}
	return w
}
