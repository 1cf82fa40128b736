package durable

import (
	"os"
	"sort"
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
			if n != "f" {
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
