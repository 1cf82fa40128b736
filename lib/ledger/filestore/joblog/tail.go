package joblog

import (
	"encoding/binary"
	"fmt"

	"github.com/tether-sh/tether/lib/ledger"
)

// tornTail checks that what is left of the log from off, where no valid
// frame starts, may be one append cut short (its torn tail, or a frame
// being appended): no longer than the frame its head declares, or than
// any frame where the head is lost. Anything longer was not written by a
// crash of an append (each append is durable before the next starts):
// it is damage, ledger.ErrCorrupt, found in one read however long it is
// (a log doubled or spliced, a run of zeros appended, a frame damaged
// before others).
func (l *Log) tornTail(off, size int64) error {
	limit := int64(MaxFrame)
	var h [FrameHead]byte
	if n, err := l.pread(h[:], off); err != nil {
		return err
	} else if n == FrameHead && binary.LittleEndian.Uint32(h[:]) == frameMagic {
		if b := int64(binary.LittleEndian.Uint32(h[4:])); b >= bodyHead && b <= maxBody {
			limit = FrameHead + b + frameTail
		}
	}
	if size-off <= limit {
		return nil
	}
	return fmt.Errorf("%w: %s: no valid frame at offset %d, and %d bytes follow, more than an append cut short", ledger.ErrCorrupt, l.Path, off, size-off)
}
