package proc

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestCheckProcNSHere(t *testing.T) {
	if err := CheckProcNS(); err != nil {
		t.Fatalf("CheckProcNS() = %v; want nil in the test process", err)
	}
}

func TestCheckProcSelf(t *testing.T) {
	tests := []struct {
		name string
		self string // target of ROOT/self; "" for none
		pid  int
		own  bool // /proc is the namespace's own: want nil
	}{
		{"own", "4242", 4242, true},
		{"another namespace's PID", "4242", 1, false},
		{"missing", "", 1, false},
		{"not a number", "self", 1, false},
		{"padded", "04242", 4242, false},
	}
	for _, tt := range tests {
		root := t.TempDir()
		if tt.self != "" {
			if err := os.Symlink(tt.self, filepath.Join(root, "self")); err != nil {
				t.Fatal(err)
			}
		}
		err := checkProcSelf(root, tt.pid)
		if tt.own && err != nil {
			t.Errorf("%s: checkProcSelf(self -> %q, %d) = %v; want nil", tt.name, tt.self, tt.pid, err)
		}
		if !tt.own && !errors.Is(err, ErrForeignProc) {
			t.Errorf("%s: checkProcSelf(self -> %q, %d) = %v; want ErrForeignProc", tt.name, tt.self, tt.pid, err)
		}
	}
}

func TestPIDNamespace(t *testing.T) {
	ns, err := PIDNamespace()
	if err != nil || ns == 0 {
		t.Fatalf("PIDNamespace() = %d, %v; want an inode", ns, err)
	}
	target, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	if want := "pid:[" + strconv.FormatUint(ns, 10) + "]"; target != want {
		t.Errorf("PIDNamespace() = %d; /proc/self/ns/pid is %s, want %s", ns, target, want)
	}
}

func TestPIDNamespaceGoneScan(t *testing.T) {
	const running = "7 (sh) S 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 500 0 0\n"
	const zombie = "8 (sh) Z 1 8 8 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 600 0 0\n"
	root := t.TempDir()
	mkProc := func(pid, ns, stat string) {
		dir := filepath.Join(root, pid)
		if err := os.MkdirAll(filepath.Join(dir, "ns"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("pid:["+ns+"]", filepath.Join(dir, "ns", "pid")); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mkProc("1", "100", running) // PID 1 is the initial namespace's, whatever its link says
	mkProc("7", "200", running)
	mkProc("8", "300", zombie)
	os.Mkdir(filepath.Join(root, "sys"), 0o755)
	tests := []struct {
		ns   uint64
		gone bool
	}{
		{200, false}, // a process runs in it
		{300, true},  // only a zombie is left
		{400, true},  // nothing
		{100, true},  // only PID 1 claims it
	}
	for _, tt := range tests {
		if gone, err := pidNamespaceGone(root, tt.ns); err != nil || gone != tt.gone {
			t.Errorf("pidNamespaceGone(%d) = %v, %v; want %v", tt.ns, gone, err, tt.gone)
		}
	}
	// A link that cannot be read: the answer is unknown, never "gone".
	if err := os.WriteFile(filepath.Join(root, "9"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if gone, err := pidNamespaceGone(root, 400); err == nil || gone {
		t.Errorf("pidNamespaceGone(400) with an unreadable process = %v, %v; want an error", gone, err)
	}
}

func TestPIDNamespaceGoneHere(t *testing.T) {
	ns, err := PIDNamespace()
	if err != nil {
		t.Fatal(err)
	}
	if gone, err := PIDNamespaceGone(ns); gone {
		t.Errorf("PIDNamespaceGone(own namespace %d) = %v, %v; want false", ns, gone, err)
	}
}

// TestBootID checks BootID against the kernel's file, read another way:
// the 36 characters of a UUID, without the newline.
func TestBootID(t *testing.T) {
	want, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Skipf("no boot id here: %v", err)
	}
	got, err := BootID()
	if err != nil || got != strings.TrimSpace(string(want)) || len(got) != 36 {
		t.Fatalf("BootID() = %q, %v; want %q", got, err, strings.TrimSpace(string(want)))
	}
}
