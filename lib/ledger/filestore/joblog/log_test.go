package joblog

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/tether-sh/tether/lib/ledger"
)

// TestParseFrame: a frame reads back whole; anything else is not a frame,
// or asks for more bytes when only cut short.
func TestParseFrame(t *testing.T) {
	t.Parallel()
	good := Frame(5, 77, KindUpdate, "0dnc2i3jq42ro-9q0u4a", 1234, []byte(`{"status":"running"}`))
	e, need, err := ParseFrame(good, 5, 77)
	if err != nil || need != 0 || e.Kind != KindUpdate || string(e.ID) != "0dnc2i3jq42ro-9q0u4a" || e.Ref != 1234 ||
		string(e.Data) != `{"status":"running"}` || e.Off != 77 || e.End != 77+int64(len(good)) {
		t.Fatalf("ParseFrame(good) = %+v, %d, %v", e, need, err)
	}
	flip := func(i int) []byte {
		b := bytes.Clone(good)
		b[i] ^= 0x40
		return b
	}
	for _, tc := range []struct {
		name  string
		b     []byte
		need  int    // > 0: cut short, asks for that many bytes
		logID uint64 // and off: where it is read (5, 77 when zero)
		off   int64
	}{
		{"empty", nil, FrameHead, 0, 0},
		{"head only", good[:FrameHead], len(good), 0, 0},
		{"cut short", good[:len(good)-1], len(good), 0, 0},
		{"bad magic", flip(0), 0, 0, 0},
		{"length too long", flip(5), len(good) + 0x4000, 0, 0},
		{"length too short", append([]byte{0x54, 0x4c, 0x47, 0x32, 1, 0, 0, 0}, good[8:]...), 0, 0, 0},
		{"bad crc", flip(9), 0, 0, 0},
		{"bad payload", flip(len(good) - 6), 0, 0, 0},
		{"bad trailer", flip(len(good) - 2), 0, 0, 0},
		{"bad kind", Frame(5, 77, 'X', "a", 0, nil), 0, 0, 0},
		{"zeros", make([]byte, 64), 0, 0, 0},
		{"at another offset", good, 0, 5, 78},
		{"in another log", good, 0, 6, 77},
		{"an old format's", append([]byte{0x54, 0x4c, 0x47, 0x31}, good[4:]...), 0, 0, 0},
	} {
		if tc.logID == 0 {
			tc.logID, tc.off = 5, 77
		}
		_, need, err := ParseFrame(tc.b, tc.logID, tc.off)
		if tc.need > 0 && (err != nil || need != tc.need) {
			t.Errorf("ParseFrame(%s) = need %d, %v; want need %d", tc.name, need, err, tc.need)
		}
		if tc.need == 0 && !errors.Is(err, ErrFrame) {
			t.Errorf("ParseFrame(%s) = need %d, %v; want ErrFrame", tc.name, need, err)
		}
	}
}

// TestReadAt reads frames of a log at their offsets, plainly and through
// a read-ahead window (its own, or a Lender's shared by two logs whose
// frames are at the same offsets): each reads back whole and its own log's,
// whether it is small, larger than a read buffer or a window, or the last
// in the file; a torn tail and the end of the file are no frame.
func TestReadAt(t *testing.T) {
	t.Parallel()
	frames := func(log int) [][]byte {
		n := strconv.Itoa(log)
		id := uint64(log + 1)
		a := Frame(id, 0, KindClaim, "small"+n, 0, bytes.Repeat([]byte("a"), 100))
		b := Frame(id, int64(len(a)), KindClaim, "large"+n, 0, bytes.Repeat([]byte("b"), 6000))
		return [][]byte{a, b, Frame(id, int64(len(a)+len(b)), KindUpdate, "last"+n, 0, []byte(`{}`))}
	}
	var offs []int64
	var whole int64
	for _, f := range frames(0) {
		offs = append(offs, whole)
		whole += int64(len(f))
	}
	torn := Frame(1, 0, KindUpdate, "torn", 0, []byte(`{"status":"failed"}`))
	dir := t.TempDir()
	open := func(name string, id uint64, b []byte) *Log {
		p := dir + "/" + name
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return &Log{fd: int(f.Fd()), Path: p, ID: id}
	}
	// A Lender whose windows are all lent to logs read more recently than
	// any here: the two logs take turns with the one it lends again.
	var lend Lender
	for range MaxWindows {
		lend.wins = append(lend.wins, &window{used: math.MaxUint64})
	}
	for _, tc := range []struct {
		name  string
		ahead int
		lend  *Lender
	}{
		{"plain", 0, nil},
		{"own window", 4 << 10, nil},
		{"lent window", 4 << 10, &lend},
	} {
		for _, tail := range [][]byte{nil, torn[:len(torn)-3]} {
			// Two logs, read in turns: a lent window moves between them.
			var logs []*Log
			for i := range 2 {
				l := open(fmt.Sprintf("%s-%d-%d", tc.name, len(tail), i), uint64(i+1), append(bytes.Join(frames(i), nil), tail...))
				l.Ahead, l.lend = tc.ahead, tc.lend
				logs = append(logs, l)
			}
			for k := range offs {
				for i, l := range logs {
					e, err := l.ReadAt(offs[k])
					want, _, _ := ParseFrame(frames(i)[k], uint64(i+1), offs[k])
					if err != nil || e.Off != offs[k] || e.End != want.End || !bytes.Equal(e.ID, want.ID) || !bytes.Equal(e.Data, want.Data) {
						t.Errorf("%s, tail %d: log %d: readAt(%d) = %q at %d..%d, %v; want %q at %d..%d",
							tc.name, len(tail), i, offs[k], e.ID, e.Off, e.End, err, want.ID, want.Off, want.End)
					}
				}
			}
			for _, off := range []int64{whole, whole + 1000} {
				if e, err := logs[0].ReadAt(off); !errors.Is(err, ErrFrame) {
					t.Errorf("%s, tail %d: readAt(%d) = %q, %v; want ErrFrame", tc.name, len(tail), off, e.ID, err)
				}
			}
		}
	}
}

// TestFrameAt: a frame whose first read stops short is read on; when the
// bytes read on do not continue it (a writer truncated the torn tail the
// first read saw and appended another frame in between), that is no
// frame, not an empty one without an error.
func TestFrameAt(t *testing.T) {
	t.Parallel()
	torn := Frame(3, 0, KindUpdate, "0dnc2i3jq42ro-9q0u4a", 1234, []byte(`{"status":"running"}`))
	other := Frame(3, 0, KindUpdate, "0dnc2i3jq42ro-9q0u4a", 1234, []byte(`{"status":"completed","exit_code":0}`))
	// file returns reads of f, the first of them cut at cut bytes.
	file := func(f []byte, cut int) func([]byte, int64) (int, error) {
		return func(b []byte, off int64) (int, error) {
			end := min(int(off)+len(b), len(f), cut)
			if end <= int(off) {
				return 0, nil
			}
			return copy(b, f[off:end]), nil
		}
	}
	for _, tc := range []struct {
		name       string
		once, full func([]byte, int64) (int, error)
		wantErr    error
		wantNeed   bool
	}{
		{"whole at once", file(torn, len(torn)), file(torn, len(torn)), nil, false},
		{"read on", file(torn, 20), file(torn, len(torn)), nil, false},
		{"file ends", file(torn, 20), file(torn[:20], 20), nil, true},
		{"another frame read on", file(torn, 20), file(other, len(other)), ErrFrame, false},
	} {
		e, need, n, err := frameAt(make([]byte, 4096), 3, 0, tc.once, tc.full)
		switch {
		case tc.wantErr != nil:
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("frameAt(%s) = %+v, need %d, n %d, %v; want %v", tc.name, e, need, n, err, tc.wantErr)
			}
		case err != nil || (need > 0) != tc.wantNeed:
			t.Errorf("frameAt(%s) = need %d, n %d, %v; want need > 0 %v, no error", tc.name, need, n, err, tc.wantNeed)
		case !tc.wantNeed && (e.Kind != KindUpdate || e.End != int64(len(torn))):
			t.Errorf("frameAt(%s) = %+v; want the frame of %d bytes", tc.name, e, len(torn))
		}
	}
}

// TestTornTail: what follows a log's last valid frame is a torn tail,
// read as the log's end, only while it may be one append cut short (no
// longer than the frame its head declares, or than MaxFrame where its head
// is lost); anything longer is damage (ErrCorrupt), decided without
// reading it.
func TestTornTail(t *testing.T) {
	t.Parallel()
	a := Frame(9, 0, KindClaim, "a", 0, []byte(`{}`))
	b := Frame(9, int64(len(a)), KindUpdate, "a", 0, []byte(`{"status":"running"}`))
	log := append(bytes.Clone(a), b...)
	next := Frame(9, int64(len(log)), KindUpdate, "a", 0, []byte(`{"status":"completed"}`))
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		tail    []byte
		corrupt bool
	}{
		{"none", nil, false},
		{"half a frame", next[:len(next)/2], false},
		{"a whole frame, one byte flipped", append(bytes.Clone(next[:len(next)-5]), next[len(next)-5]^1, 0, 0, 0, 0), false},
		{"zeros, one frame long", make([]byte, MaxFrame), false},
		{"zeros, longer than a frame", make([]byte, MaxFrame+1), true},
		{"the log again (doubled)", log, true},
		{"a frame, then more", append(bytes.Clone(next[:FrameHead+2]), make([]byte, len(next))...), true},
	} {
		p := dir + "/" + strings.ReplaceAll(tc.name, " ", "_")
		if err := os.WriteFile(p, append(bytes.Clone(log), tc.tail...), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		l := &Log{fd: int(f.Fd()), Path: p, ID: 9}
		end, err := l.Scan(0, func(Entry) error { return nil })
		f.Close()
		switch {
		case tc.corrupt && !errors.Is(err, ledger.ErrCorrupt):
			t.Errorf("Scan(log + %s) = %d, %v; want ErrCorrupt", tc.name, end, err)
		case !tc.corrupt && (err != nil || end != int64(len(log))):
			t.Errorf("Scan(log + %s) = %d, %v; want %d, no error", tc.name, end, err, len(log))
		}
	}
}
