package filestore

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/tether-sh/tether/lib/ledger"
)

// TestParseFrame: a frame reads back whole; anything else is not a frame,
// or asks for more bytes when only cut short.
func TestParseFrame(t *testing.T) {
	t.Parallel()
	good := frame(kindUpdate, "0dnc2i3jq42ro-9q0u4a", 1234, []byte(`{"status":"running"}`))
	e, need, err := parseFrame(good, 77)
	if err != nil || need != 0 || e.kind != kindUpdate || e.id != "0dnc2i3jq42ro-9q0u4a" || e.ref != 1234 ||
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
