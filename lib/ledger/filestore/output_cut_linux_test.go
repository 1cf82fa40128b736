package filestore

import (
	"bytes"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/ledger"
)

// TestOutputWriteCutShort: a Write of limit bytes or more is the whole
// tail, and a runner's queue sends one after a gap (a flood it could not
// store as fast keeps only its last limit bytes). Cut short (here by a
// file size limit, as a full disk or the writer's SIGKILL cut it), it must
// leave the old tail or the new one, never the old tail's end spliced to
// the start of the new write (#48.14: 1 tail in 44 after a SIGKILL
// mid-flood). Not parallel: the size limit is the whole process's.
func TestOutputWriteCutShort(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "ledger"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := mustClaim(t, s, "j", ledger.ClaimOptions{})
	const limit = 8
	w, err := s.OpenOutput(r.ID, limit)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Write([]byte("0123")); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(s.dir, outputDir, r.ID), &st); err != nil {
		t.Fatal(err)
	}
	// Room for 3 more bytes in any file this process writes.
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	lim := unix.Rlimit{Cur: uint64(st.Size) + 3, Max: old.Max}
	if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &lim); err != nil {
		t.Skipf("cannot limit file sizes: %v", err)
	}
	_, werr := w.Write([]byte("ABCDEFGHIJ"))
	if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	got, err := readOutput(s, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, []byte("0123")) && !bytes.Equal(got, []byte("CDEFGHIJ")) {
		t.Errorf("Output after a Write of %d bytes cut short (%v) = %q; want the old tail %q or the new %q", 10, werr, got, "0123", "CDEFGHIJ")
	}
}
