package gate

import (
	"go/parser"
	"go/token"
	"io/fs"
	"slices"
	"strconv"
	"strings"
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
// make a tool's start-up slow only while it imports nothing but syscall
// and sigstate, which imports nothing but syscall, sync and unsafe.
func TestImportsOnlySyscall(t *testing.T) {
	const sigstate = "github.com/tether-sh/tether/lib/internal/sigstate"
	for _, tc := range []struct {
		dir     string
		allowed []string
	}{
		{".", []string{"syscall", sigstate}},
		{"../sigstate", []string{"syscall", "sync", "unsafe"}},
	} {
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, tc.dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pkgs {
			for name, f := range p.Files {
				for _, imp := range f.Imports {
					if path, _ := strconv.Unquote(imp.Path.Value); !slices.Contains(tc.allowed, path) {
						t.Errorf("%s imports %q; want only %q", name, path, tc.allowed)
					}
				}
			}
		}
	}
}
