package durable

import (
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func openDir(t *testing.T) Dir {
	t.Helper()
	p := t.TempDir()
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return Dir{FD: fd, Path: p}
}

func names(t *testing.T, d Dir) []string {
	t.Helper()
	ents, err := os.ReadDir(d.Path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

func content(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func ino(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// TestWrite: every way of writing leaves the new content under the name
// and no temporary file behind.
func TestWrite(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		write func(d Dir, name string, data []byte) error
	}{
		{"Write", func(d Dir, n string, b []byte) error { return Write(d, n, b, false) }},
		{"Write sync", func(d Dir, n string, b []byte) error { return Write(d, n, b, true) }},
		{"WriteSynced", WriteSynced},
		{"Stage+Commit", func(d Dir, n string, b []byte) error {
			p, err := Stage(d, n, b, true)
			if err != nil {
				return err
			}
			return p.Commit()
		}},
		{"Replace", func(d Dir, n string, b []byte) error { return new(Replacer).Replace(d, n, b) }},
		{"WriteFile", func(d Dir, n string, b []byte) error { return WriteFile(d.Show(n), b, 0o600) }},
	} {
		d := openDir(t)
		for _, data := range []string{"first version\n", "2\n", ""} {
			if err := tc.write(d, "f", []byte(data)); err != nil {
				t.Fatalf("%s(%q) = %v", tc.name, data, err)
			}
			if got := content(t, d.Show("f")); got != data {
				t.Errorf("%s(%q): content = %q; want %q", tc.name, data, got, data)
			}
		}
		for _, n := range names(t, d) {
			if n != "f" && n != SpareName {
				t.Errorf("%s left %q behind", tc.name, n)
			}
		}
		if fi, _ := os.Stat(d.Show("f")); fi.Mode().Perm() != 0o600 && tc.name == "WriteFile" {
			t.Errorf("%s mode = %v; want 0600", tc.name, fi.Mode().Perm())
		}
	}
}

// TestStageAbort: an aborted stage leaves the destination as it was.
func TestStageAbort(t *testing.T) {
	t.Parallel()
	d := openDir(t)
	if err := WriteSynced(d, "f", []byte("old")); err != nil {
		t.Fatal(err)
	}
	p, err := Stage(d, "f", []byte("new"), true)
	if err != nil {
		t.Fatal(err)
	}
	p.Abort()
	if got := content(t, d.Show("f")); got != "old" {
		t.Errorf("content after Abort = %q; want %q", got, "old")
	}
	if got := names(t, d); len(got) != 1 {
		t.Errorf("names after Abort = %v; want [f]", got)
	}
}

// TestReplaceRotates: Replace exchanges two inodes and allocates none
// once both exist, and never writes through a spare with another link.
func TestReplaceRotates(t *testing.T) {
	t.Parallel()
	d := openDir(t)
	var r Replacer
	for _, v := range []string{"a", "b"} {
		if err := r.Replace(d, "f", []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if r.NoExchange() {
		t.Skip("RENAME_EXCHANGE is not offered here")
	}
	f, spare := ino(t, d.Show("f")), ino(t, d.Show(SpareName))
	if err := r.Replace(d, "f", []byte("c")); err != nil {
		t.Fatal(err)
	}
	if gf, gs := ino(t, d.Show("f")), ino(t, d.Show(SpareName)); gf != spare || gs != f {
		t.Errorf("inodes after Replace = f %d spare %d; want f %d spare %d (exchanged)", gf, gs, spare, f)
	}
	// A hard link to the spare (a snapshot) is never written through.
	if err := os.Link(d.Show(SpareName), filepath.Join(d.Path, "snapshot")); err != nil {
		t.Fatal(err)
	}
	before := content(t, filepath.Join(d.Path, "snapshot"))
	if err := r.Replace(d, "f", []byte("d")); err != nil {
		t.Fatal(err)
	}
	if got := content(t, filepath.Join(d.Path, "snapshot")); got != before {
		t.Errorf("snapshot = %q after Replace; want %q untouched", got, before)
	}
	if got := content(t, d.Show("f")); got != "d" {
		t.Errorf("content = %q; want %q", got, "d")
	}
}

// TestReplaceFallback: where the exchange is unsupported Replace renames
// instead, and never tries the exchange again.
func TestReplaceFallback(t *testing.T) {
	t.Parallel()
	for _, errno := range []error{unix.EINVAL, unix.ENOSYS, unix.EOPNOTSUPP} {
		d := openDir(t)
		calls := 0
		r := Replacer{Exchange: func(int, string, string) error { calls++; return errno }}
		if err := WriteSynced(d, "f", []byte("old")); err != nil {
			t.Fatal(err)
		}
		for _, v := range []string{"x", "y"} {
			if err := r.Replace(d, "f", []byte(v)); err != nil {
				t.Fatalf("Replace with exchange %v = %v", errno, err)
			}
			if got := content(t, d.Show("f")); got != v {
				t.Errorf("Replace with exchange %v: content = %q; want %q", errno, got, v)
			}
		}
		if calls != 1 || !r.NoExchange() {
			t.Errorf("exchange %v: called %d times, NoExchange %v; want once, true", errno, calls, r.NoExchange())
		}
	}
}
