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

func TestSetEnv(t *testing.T) {
	tests := []struct {
		env  []string
		kv   string
		want []string
	}{
		{nil, "A=1", []string{"A=1"}},
		{[]string{"A=0", "AB=2", "B=3", "A=9"}, "A=1", []string{"AB=2", "B=3", "A=1"}},
		{[]string{"A", "A=0"}, "A=", []string{"A", "A="}},
	}
	for _, tt := range tests {
		if got := setEnv(slices.Clone(tt.env), tt.kv); !slices.Equal(got, tt.want) {
			t.Errorf("setEnv(%q, %q) = %q; want %q", tt.env, tt.kv, got, tt.want)
		}
	}
}

// TestImportsOnlySyscall: the gate's init runs before the packages that
// make a tool's start-up slow only while it imports nothing but syscall.
func TestImportsOnlySyscall(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		for name, f := range p.Files {
			for _, imp := range f.Imports {
				if path, _ := strconv.Unquote(imp.Path.Value); path != "syscall" {
					t.Errorf("%s imports %q; want syscall alone", name, path)
				}
			}
		}
	}
}
