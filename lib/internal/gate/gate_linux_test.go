package gate

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"a", []string{"a"}},
		{"a\x00b", []string{"a", "b"}},
		{"a\x00\x00b", []string{"a", "", "b"}},
		{"\x00", []string{"", ""}},
	}
	for _, tt := range tests {
		if got := split([]byte(tt.in)); !slices.Equal(got, tt.want) {
			t.Errorf("split(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

// TestImportsOnlySyscall: the gate's init runs before the packages that
// make a tool's start-up slow only while it imports nothing but syscall,
// sigstate, which imports nothing but syscall, sync and unsafe, and the
// re-exec protocol's marks, which import nothing.
func TestImportsOnlySyscall(t *testing.T) {
	const (
		sigstate = "github.com/tether-sh/tether/lib/internal/sigstate"
		marker   = "github.com/tether-sh/tether/lib/internal/reexec/marker"
	)
	for _, tc := range []struct {
		dir     string
		allowed []string
	}{
		{".", []string{"syscall", sigstate, marker}},
		{"../sigstate", []string{"syscall", "sync", "unsafe"}},
		{"../reexec/marker", nil},
	} {
		// Every file of the package, whatever its build tags.
		names, err := filepath.Glob(filepath.Join(tc.dir, "*.go"))
		if err != nil || len(names) == 0 {
			t.Fatalf("%s: no Go file (%v)", tc.dir, err)
		}
		fset := token.NewFileSet()
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				if path, _ := strconv.Unquote(imp.Path.Value); !slices.Contains(tc.allowed, path) {
					t.Errorf("%s imports %q; want only %q", name, path, tc.allowed)
				}
			}
		}
	}
}

func TestSplitMode(t *testing.T) {
	tests := []struct {
		in     string
		mode   string
		faults []syscall.Signal
	}{
		{"-", "-", nil},
		{"proc", "proc", nil},
		{"-:11", "-", []syscall.Signal{11}},
		{"proc:4,5,7,8,11,16,31", "proc", []syscall.Signal{4, 5, 7, 8, 11, 16, 31}},
		// Out of range or empty: passed over.
		{"-:0,65,,1000,7", "-", []syscall.Signal{7}},
	}
	for _, tt := range tests {
		mode, faults := splitMode(tt.in)
		if mode != tt.mode || !slices.Equal(faults, tt.faults) {
			t.Errorf("splitMode(%q) = %q, %v; want %q, %v", tt.in, mode, faults, tt.mode, tt.faults)
		}
	}
}
