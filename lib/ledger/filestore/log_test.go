//go:build linux

package filestore

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/filestore/jobindex"
)

// TestParseFrame: a frame reads back whole; anything else is not a frame,
// or asks for more bytes when only cut short.
func TestParseFrame(t *testing.T) {
	t.Parallel()
	good := frame(kindUpdate, "0dnc2i3jq42ro-9q0u4a", 1234, []byte(`{"status":"running"}`))
	e, need, err := parseFrame(good, 77)
	if err != nil || need != 0 || e.kind != kindUpdate || string(e.id) != "0dnc2i3jq42ro-9q0u4a" || e.ref != 1234 ||
		string(e.data) != `{"status":"running"}` || e.off != 77 || e.end != 77+int64(len(good)) {
		t.Fatalf("parseFrame(good) = %+v, %d, %v", e, need, err)
	}
	flip := func(i int) []byte {
		b := bytes.Clone(good)
		b[i] ^= 0x40
		return b
	}
	for _, tc := range []struct {
		name string
		b    []byte
		need int // > 0: cut short, asks for that many bytes
	}{
		{"empty", nil, frameHead},
		{"head only", good[:frameHead], len(good)},
		{"cut short", good[:len(good)-1], len(good)},
		{"bad magic", flip(0), 0},
		{"length too long", flip(5), len(good) + 0x4000},
		{"length too short", append([]byte{0x54, 0x4c, 0x47, 0x31, 1, 0, 0, 0}, good[8:]...), 0},
		{"bad crc", flip(9), 0},
		{"bad payload", flip(len(good) - 6), 0},
		{"bad trailer", flip(len(good) - 2), 0},
		{"bad kind", frame('X', "a", 0, nil), 0},
		{"zeros", make([]byte, 64), 0},
	} {
		_, need, err := parseFrame(tc.b, 0)
		if tc.need > 0 && (err != nil || need != tc.need) {
			t.Errorf("parseFrame(%s) = need %d, %v; want need %d", tc.name, need, err, tc.need)
		}
		if tc.need == 0 && !errors.Is(err, errFrame) {
			t.Errorf("parseFrame(%s) = need %d, %v; want errFrame", tc.name, need, err)
		}
	}
}

// TestLogTail: a writer cuts a torn tail away before it appends, and
// refuses to append after damage that valid frames follow (readers
// report it), which it leaves as it is.
func TestLogTail(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	a := mustClaim(t, s, "j", ledger.ClaimOptions{})
	p := s.path(jobsDir, "j", logName)
	clean, _ := os.ReadFile(p)
	torn := frame(kindUpdate, a.ID, 1, []byte(`{"status":"failed"}`))
	for _, cut := range []int{1, frameHead, len(torn) - 1} {
		os.WriteFile(p, append(bytes.Clone(clean), torn[:cut]...), 0o600)
		if r, err := s.Get(a.ID); err != nil || r.Status != ledger.Claimed {
			t.Fatalf("Get with %d bytes of a torn frame = %v, %v; want claimed", cut, r.Status, err)
		}
		if _, err := s.Start(a.ID, nil); err != nil {
			t.Fatalf("Start after %d bytes of a torn frame = %v", cut, err)
		}
		b, _ := os.ReadFile(p)
		e, need, err := parseFrame(b[len(clean):], 0)
		if !bytes.HasPrefix(b, clean) || err != nil || need != 0 || int(e.end) != len(b)-len(clean) {
			t.Fatalf("log after a torn tail of %d bytes and a start: the tail was not cut (%v)", cut, err)
		}
		os.WriteFile(p, clean, 0o600)
	}
	// Damage with a valid frame after it: no write.
	b := mustClaim(t, s, "j", ledger.ClaimOptions{})
	before, _ := os.ReadFile(p)
	damaged := bytes.Clone(before)
	damaged[len(clean)+frameHead+3] ^= 1 // b's claim frame, not the last
	mustClaim(t, s, "k", ledger.ClaimOptions{})
	os.WriteFile(p, append(damaged, frame(kindUpdate, b.ID, int64(len(clean)), []byte(`{}`))...), 0o600)
	want, _ := os.ReadFile(p)
	if _, err := s.Get(b.ID); !errors.Is(err, ledger.ErrCorrupt) {
		t.Errorf("Get past damage = %v; want ErrCorrupt", err)
	}
	if _, err := s.Finish(b.ID, ledger.Failed, nil, ""); !errors.Is(err, ledger.ErrCorrupt) {
		t.Errorf("Finish past damage = %v; want ErrCorrupt", err)
	}
	if got, _ := os.ReadFile(p); !bytes.Equal(got, want) {
		t.Errorf("a refused write changed the damaged log")
	}
}

// TestStaleLinks puts the links in the states a crash or a power cut can
// leave them in: each still finds the newest version, and the next
// recover puts them right.
func TestStaleLinks(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	live := mustClaim(t, s, "j", ledger.ClaimOptions{})
	claimLink, _ := os.Readlink(s.path(activeDir, live.ID))
	must(t)(s.Start(live.ID, nil))
	done := mustClaim(t, s, "j", ledger.ClaimOptions{})
	doneLink, _ := os.Readlink(s.path(activeDir, done.ID))
	must(t)(s.Finish(done.ID, ledger.Failed, nil, "x"))
	put := func(dir, id, target string) {
		t.Helper()
		os.Remove(s.path(dir, id))
		if err := os.Symlink(target, s.path(dir, id)); err != nil {
			t.Fatal(err)
		}
	}
	check := func(what string, id string, want ledger.Status) {
		t.Helper()
		if r, err := s.Get(id); err != nil || r.Status != want {
			t.Errorf("%s: Get = %v, %v; want %s", what, r.Status, err, want)
		}
	}
	// A live execution's link still at its claim.
	put(activeDir, live.ID, claimLink)
	check("link at the claim", live.ID, ledger.Running)
	// Of another generation, or an offset in the middle of a frame.
	put(activeDir, live.ID, "7"+claimLink)
	check("link of another generation", live.ID, ledger.Running)
	put(activeDir, live.ID, "1:3:j")
	check("link into a frame", live.ID, ledger.Running)
	// A finished one whose link never left active/: in its job's index
	// (killed between the entry and the unlink), or not (killed before
	// the entry).
	put(activeDir, done.ID, doneLink)
	check("finished, linked in active/ and indexed", done.ID, ledger.Failed)
	emptyIds(t, s.path(jobsDir, "j", jobindex.Name))
	check("finished, linked in active/ only", done.ID, ledger.Failed)
	if got, _ := ledger.List(s, ledger.Filter{Status: ledger.Claimed}); len(got) != 0 {
		t.Errorf("List(claimed) with a finished one in active/ = %v; want none", got)
	}
	// A link to a claim that died before its frame.
	ghost := "0dnc29zzzzzzz-zzzzzz"
	put(activeDir, ghost, "1:999999:j")
	if _, err := s.Get(ghost); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Get(a link to no frame) = %v; want ErrNotFound", err)
	}
	if _, err := s.Recover(time.Hour); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{s.path(activeDir, done.ID), s.path(activeDir, ghost)} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after Recover, %s: %v; want it gone", p, err)
		}
	}
	if in, trusted := indexState(t, s, "j", done.ID); !in || !trusted {
		t.Errorf("after Recover, %s in the index = %v (trusted %v); want it there", done.ID, in, trusted)
	}
	check("after Recover", live.ID, ledger.Running)
	check("after Recover", done.ID, ledger.Failed)
}

// TestReadAt reads frames of a log at their offsets, plainly and through
// a read-ahead window (its own, or a lender's shared by two logs whose
// frames are at the same offsets): each reads back whole and its own log's,
// whether it is small, larger than a read buffer or a window, or the last
// in the file; a torn tail and the end of the file are no frame.
func TestReadAt(t *testing.T) {
	t.Parallel()
	frames := func(log int) [][]byte {
		n := strconv.Itoa(log)
		return [][]byte{
			frame(kindClaim, "small"+n, 0, bytes.Repeat([]byte("a"), 100)),
			frame(kindClaim, "large"+n, 0, bytes.Repeat([]byte("b"), 6000)),
			frame(kindUpdate, "last"+n, 0, []byte(`{}`)),
		}
	}
	var offs []int64
	var whole int64
	for _, f := range frames(0) {
		offs = append(offs, whole)
		whole += int64(len(f))
	}
	torn := frame(kindUpdate, "torn", 0, []byte(`{"status":"failed"}`))
	dir := t.TempDir()
	open := func(name string, b []byte) *jobLog {
		p := dir + "/" + name
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return &jobLog{fd: int(f.Fd()), path: p}
	}
	// A lender whose windows are all lent to logs read more recently than
	// any here: the two logs take turns with the one it lends again.
	var lend lender
	for range maxWindows {
		lend.wins = append(lend.wins, &window{used: math.MaxUint64})
	}
	for _, tc := range []struct {
		name  string
		ahead int
		lend  *lender
	}{
		{"plain", 0, nil},
		{"own window", 4 << 10, nil},
		{"lent window", 4 << 10, &lend},
	} {
		for _, tail := range [][]byte{nil, torn[:len(torn)-3]} {
			// Two logs, read in turns: a lent window moves between them.
			var logs []*jobLog
			for i := range 2 {
				l := open(fmt.Sprintf("%s-%d-%d", tc.name, len(tail), i), append(bytes.Join(frames(i), nil), tail...))
				l.ahead, l.lend = tc.ahead, tc.lend
				logs = append(logs, l)
			}
			for k := range offs {
				for i, l := range logs {
					e, err := l.readAt(offs[k])
					want, _, _ := parseFrame(frames(i)[k], offs[k])
					if err != nil || e.off != offs[k] || e.end != want.end || !bytes.Equal(e.id, want.id) || !bytes.Equal(e.data, want.data) {
						t.Errorf("%s, tail %d: log %d: readAt(%d) = %q at %d..%d, %v; want %q at %d..%d",
							tc.name, len(tail), i, offs[k], e.id, e.off, e.end, err, want.id, want.off, want.end)
					}
				}
			}
			for _, off := range []int64{whole, whole + 1000} {
				if e, err := logs[0].readAt(off); !errors.Is(err, errFrame) {
					t.Errorf("%s, tail %d: readAt(%d) = %q, %v; want errFrame", tc.name, len(tail), off, e.id, err)
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
	torn := frame(kindUpdate, "0dnc2i3jq42ro-9q0u4a", 1234, []byte(`{"status":"running"}`))
	other := frame(kindUpdate, "0dnc2i3jq42ro-9q0u4a", 1234, []byte(`{"status":"completed","exit_code":0}`))
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
		{"another frame read on", file(torn, 20), file(other, len(other)), errFrame, false},
	} {
		e, need, n, err := frameAt(make([]byte, 4096), 0, tc.once, tc.full)
		switch {
		case tc.wantErr != nil:
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("frameAt(%s) = %+v, need %d, n %d, %v; want %v", tc.name, e, need, n, err, tc.wantErr)
			}
		case err != nil || (need > 0) != tc.wantNeed:
			t.Errorf("frameAt(%s) = need %d, n %d, %v; want need > 0 %v, no error", tc.name, need, n, err, tc.wantNeed)
		case !tc.wantNeed && (e.kind != kindUpdate || e.end != int64(len(torn))):
			t.Errorf("frameAt(%s) = %+v; want the frame of %d bytes", tc.name, e, len(torn))
		}
	}
}
