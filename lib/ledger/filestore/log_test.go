//go:build linux

package filestore

import (
	"bytes"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
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
	emptyIds(t, s.path(jobsDir, "j", idsName))
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
