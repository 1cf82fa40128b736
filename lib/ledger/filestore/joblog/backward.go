package joblog

import (
	"encoding/binary"
	"sync"
)

// Backward calls fn with each frame that ends at or before end, the
// newest first, until fn returns false or the first frame was passed. It
// reads the log backwards in windows of ReadSize (a frame's length is
// also at its end), so that the newest few frames of a long log cost a
// read or two, not a read each. A frame that does not parse where one
// should end returns ErrFrame: a torn tail or an append under way, or
// damage, which a forward Scan tells apart. fn's Entry is valid only
// during the call.
func (l *Log) Backward(end int64, fn func(Entry) bool) error {
	// The window, the log's bytes from winOff on, is one of a pool: a
	// status of a hundred jobs reads a hundred logs backwards.
	pooled := windows.Get().(*[]byte)
	win := (*pooled)[:0]
	defer func() {
		*pooled = win[:0]
		windows.Put(pooled)
	}()
	winOff := end
	load := func(from, to int64) error {
		from = max(l.First, min(from, to-ReadSize))
		if cap(win) < int(to-from) {
			win = make([]byte, to-from)
		}
		win = win[:to-from]
		if n, err := l.pread(win, from); err != nil || n < len(win) {
			return ErrFrame
		}
		winOff = from
		return nil
	}
	for end > l.First {
		if end-frameTail < l.First {
			return ErrFrame
		}
		if end-frameTail < winOff || end > winOff+int64(len(win)) {
			if err := load(end-frameTail, end); err != nil {
				return err
			}
		}
		n := int64(binary.LittleEndian.Uint32(win[end-frameTail-winOff:]))
		off := end - n - FrameHead - frameTail
		if n < bodyHead || n > maxBody || off < l.First {
			return ErrFrame
		}
		if off < winOff {
			if err := load(off, end); err != nil {
				return err
			}
		}
		e, need, err := ParseFrame(win[off-winOff:end-winOff], l.ID, off)
		if err != nil || need != 0 || e.End != end {
			return ErrFrame
		}
		if !fn(e) {
			return nil
		}
		end = off
	}
	return nil
}

// windows holds Backward's windows.
var windows = sync.Pool{New: func() any { b := make([]byte, 0, ReadSize); return &b }}
