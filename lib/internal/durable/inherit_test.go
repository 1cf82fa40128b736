package durable

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestInherit: a folder that grants its group read and search passes its
// group and the group's read bit to every file written in it (and search
// to a folder), never anything for others; a private folder keeps its
// files 0600.
func TestInherit(t *testing.T) {
	for _, tc := range []struct {
		dirMode os.FileMode
		want    uint32
	}{
		{0o700, 0o600},
		{0o750, 0o640},
		{0o755, 0o640},
		{0o740, 0o600}, // read without search lets no one in
	} {
		d := openDir(t)
		if err := os.Chmod(d.Path, tc.dirMode); err != nil {
			t.Fatal(err)
		}
		if os.Geteuid() == 0 {
			// A group not root's own, as a store opened to "ops" is.
			if err := os.Chown(d.Path, -1, 4242); err != nil {
				t.Fatal(err)
			}
		}
		if err := Write(d, "rec", []byte("x\n"), true); err != nil {
			t.Fatal(err)
		}
		// A second write replaces the first.
		if err := Write(d, "rec", []byte("y\n"), true); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(filepath.Join(d.Path, "rec"))
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if got := uint32(st.Mode) & 0o7777; got != tc.want {
			t.Errorf("Write in a %04o folder: mode = %04o; want %04o", tc.dirMode, got, tc.want)
		}
		var dst syscall.Stat_t
		if err := syscall.Stat(d.Path, &dst); err != nil {
			t.Fatal(err)
		}
		if tc.want == 0o640 && st.Gid != dst.Gid {
			t.Errorf("Write in a %04o folder: gid = %d; want the folder's %d", tc.dirMode, st.Gid, dst.Gid)
		}
		if got, want := FileMode(d), tc.want; got != want {
			t.Errorf("FileMode(%04o folder) = %04o; want %04o", tc.dirMode, got, want)
		}
		wantDir := uint32(0o700)
		if tc.want == 0o640 {
			wantDir = 0o750
		}
		if got := DirMode(d); got != wantDir {
			t.Errorf("DirMode(%04o folder) = %04o; want %04o", tc.dirMode, got, wantDir)
		}
	}
}
