//go:build linux

package filestore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/filestore/jobindex"
	"github.com/tether-sh/tether/lib/ledger/filestore/joblog"
)

// logID is the id in the header of the log at path.
func logID(t *testing.T, path string) uint64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := joblog.ParseFrame(b, 0, 0)
	if err != nil || len(h.Data) < 8 {
		t.Fatalf("header of %s: %v", path, err)
	}
	return binary.LittleEndian.Uint64(h.Data)
}

// TestLogTail: a writer cuts a torn tail away before it appends, and
// refuses to append after damage that valid frames follow (readers
// report it), which it leaves as it is.
func TestLogTail(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	a := mustClaim(t, s, "j", ledger.ClaimOptions{})
	p := s.path(jobsDir, "j", joblog.Name)
	clean, _ := os.ReadFile(p)
	id := logID(t, p)
	torn := joblog.Frame(id, int64(len(clean)), joblog.KindUpdate, a.ID, 1, []byte(`{"status":"failed"}`))
	for _, cut := range []int{1, joblog.FrameHead, len(torn) - 1} {
		os.WriteFile(p, append(bytes.Clone(clean), torn[:cut]...), 0o600)
		if r, err := s.Get(a.ID); err != nil || r.Status != ledger.Claimed {
			t.Fatalf("Get with %d bytes of a torn frame = %v, %v; want claimed", cut, r.Status, err)
		}
		if _, err := s.Start(a.ID, nil); err != nil {
			t.Fatalf("Start after %d bytes of a torn frame = %v", cut, err)
		}
		b, _ := os.ReadFile(p)
		e, need, err := joblog.ParseFrame(b[len(clean):], id, int64(len(clean)))
		if !bytes.HasPrefix(b, clean) || err != nil || need != 0 || int(e.End) != len(b) {
			t.Fatalf("log after a torn tail of %d bytes and a start: the tail was not cut (%v)", cut, err)
		}
		// Back to the clean log: the start it cuts away was durable, so
		// the summary the start cached (which counted it) goes too.
		os.WriteFile(p, clean, 0o600)
		os.Remove(s.path(jobsDir, "j", summaryName))
	}
	// Damage with a valid frame after it: no write.
	b := mustClaim(t, s, "j", ledger.ClaimOptions{})
	before, _ := os.ReadFile(p)
	damaged := bytes.Clone(before)
	damaged[len(clean)+joblog.FrameHead+3] ^= 1 // b's claim frame, not the last
	mustClaim(t, s, "k", ledger.ClaimOptions{})
	os.WriteFile(p, append(damaged, joblog.Frame(id, int64(len(damaged)), joblog.KindUpdate, b.ID, int64(len(clean)), []byte(`{}`))...), 0o600)
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
	// A link to a claim that died before its frame: it names the log's
	// end as it was then (here, now). One past the end names a frame the
	// log lost: damage.
	ghost := ledger.NewID(time.Now(), "j")
	st, err := os.Stat(s.path(jobsDir, "j", joblog.Name))
	if err != nil {
		t.Fatal(err)
	}
	put(activeDir, ghost, fmt.Sprintf("1:%d:j", st.Size()+1))
	if _, err := s.Get(ghost); !errors.Is(err, ledger.ErrCorrupt) {
		t.Errorf("Get(a link past the log's end) = %v; want ErrCorrupt", err)
	}
	put(activeDir, ghost, fmt.Sprintf("1:%d:j", st.Size()))
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
